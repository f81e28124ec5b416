# SPDX-License-Identifier: GPL-2.0
#
# Shared by the host tier's scripts (sourced): PASS/FAIL lines, which scripts/test.sh counts.
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check_eq() { if [[ $2 == "$3" ]]; then pass "$1 = $2"; else fail "$1 = $2, want $3"; fi; }
check_ge() { if (($2 >= $3)); then pass "$1 = $2 >= $3"; else fail "$1 = $2, want >= $3"; fi; }

# Wait up to 10 s until no program whose name matches the extended regex @1 is loaded: the
# kernel frees programs after their loader's exit, once their links' grace periods end
# (tracepoint links took up to a second here; the VM tests' progs_left() waits as long). Sets
# progs_left to how many are still loaded and progs_waited to the seconds it waited.
wait_progs_gone() {
	local ds
	for ds in $(seq 0 100); do
		progs_left=$(bpftool prog show 2>/dev/null | grep -cE "name ($1)" || true)
		((progs_left == 0)) && break
		sleep 0.1
	done
	progs_waited=$((ds / 10)).$((ds % 10))
}
