/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_miami: the MiAMI agent's round (paper III-D) in BPF, run by a BPF timer every
 * --interval-ms: "the scheduling agent is designed as kernel-level timers so that it can wake
 * up and perform the scheduling decision periodically".
 *
 * Why in BPF: the round ran in the loader, which woke ten times a second for it. Under TCG a
 * wakeup of a loader that does little costs about 0.7 ms of CPU, so ten a second were already
 * more than twice scx_bpfland's whole loader (issue 14, docs/results/loader-cost.md), whatever
 * the round itself cost. Now the loader wakes for the IRQ map, stats and signals only, at most
 * once a second when nobody asks for stats.
 *
 * Each round (agent_round()):
 * 0. Inputs. The CPU loads: each CPU's busy share since the last round, in hundredths of a
 *    percent, from the kernel's CPU time counters that /proc/stat sums, hard and soft IRQ time
 *    included (agent.bpf.c snap_cpu_loads()); MIAMI_LOAD_NONE for an offline CPU, which
 *    is then neither a CPU with room nor an overloaded one. The network tasks: agent.bpf.c's
 *    snapshot of net_tasks, each with its share of a CPU (agent_util()).
 * 1. Release: tasks silent for release_ns are out of the agent's view. The release itself
 *    happens at the task's next placement (agent.bpf.c is_net_task()), in O(1); the round only
 *    stops considering them and counts them.
 * 2. Upgrade: class-high tasks in the cache or other tier move to their IRQ CPU if its load is
 *    below --low-load-pct, else (from the other tier) to the least loaded CPU of the IRQ CPU's
 *    LLC below that load. Most intensive first. A target that runs a network task already must
 *    stay below --low-load-pct with the mover's own share of a CPU added (fits()).
 * 3. Shed and adapt: for each CPU above --high-load-pct, most loaded first, the task that needs
 *    affinity least moves to a CPU below --low-load-pct, in its IRQ CPU's LLC if one is, else in
 *    another LLC, but only out of an LLC overloaded on average (above --high-load-pct) into one
 *    lightly loaded on average (below --low-load-pct): low class before middle before high, other
 *    tier before cache before core, less intensive first; so core-tier high-class tasks go last.
 *    When that task cannot move, only another of its class and tier may go in its place.
 *    A target that runs a network task must stay below --high-load-pct with the victim's share.
 *    One task per CPU per round: the next round sees the new load. The last network task on a CPU
 *    is not shed: shedding settles contention between tasks, and one task with its own softirq on
 *    its IRQ CPU is the placement MiAMI aims for, however busy that keeps the CPU; unless a task
 *    of a higher class whose IRQ CPU this is waits in another tier. The boundaries move once per
 *    round in which some CPU is overloaded by two or more network tasks: the lower boundary of the
 *    lowest class running on the most loaded such CPU rises by a quarter (the paper's "reducing
 *    the window size of the lowest class where processes are running"), so that the least
 *    intensive of that class drop a class and give way first while the more intensive ones keep
 *    their tier. It never rises past 3/4 of the intensiveness of the most intensive task there
 *    (agent_adapt()). When no CPU is overloaded, each boundary moves a quarter of the way back
 *    toward its initial value (--class-bounds).
 *
 * The boundaries are global, not per IRQ CPU: a class decides who gives way when tasks of
 * several NICs share an LLC, which only works if one intensiveness means one class everywhere;
 * and placement classifies at every wakeup, where one global pair is two loads.
 *
 * At most max_moves (--max-migrations) moves per round are decided here, and agent.bpf.c
 * apply_move() enforces the same cap where they are applied. A move repeated to the same CPU is
 * not sent again within MIAMI_REPEAT_ROUNDS, so a move that placement cannot honour (no room at
 * the target) does not eat every round's budget.
 *
 * Determinism: ties go to the lower tid or CPU id, as src/policy.rs did; tests/policy.rs runs
 * this round on the host (miami_agent_round(), synthetic tasks and loads) and holds it to the
 * behaviour the agent had in user space.
 *
 * Verifier notes: the per-task and per-CPU state lives in .bss arrays, loops are bpf_for() with
 * counts kept in globals (so that the verifier does not tell loop states apart by them), and
 * the sort and the per-task steps are global functions, verified once each with unknown scalar
 * arguments. A round touches every network task a few times and sorts two lists of them.
 *
 * One file past the house style's ~800 lines, on purpose: every step reads and writes the
 * round's scratch (the static per-CPU and per-task arrays below), which a split would have to
 * export across objects as globals; and the verifier sees one program either way.
 */
#include "miami.bpf.h"

char _license[] SEC("license") = "GPL";

#define NT		MIAMI_MAX_NET_TASKS
#define NO_LOAD		MIAMI_LOAD_NONE
#define CLASS_NONE	MIAMI_NR_CLASSES

/*
 * Configuration, written by user space (.data, where the zero ones are put too: user space
 * writes them all in one place) at start and on SIGHUP. Loads are in hundredths of a percent.
 * agent_init_high == 0: --class-bounds auto.
 */
volatile u32 agent_low_load = 5000;
volatile u32 agent_high_load = 9000;
volatile u32 agent_init_high SEC(".data");
volatile u32 agent_init_middle SEC(".data");
/* Set by user space when --class-bounds changed (SIGHUP): the next round starts over from them. */
volatile u32 agent_reset SEC(".data");
/* 0 under --observe: decide, but write no moves (no ops to apply them). */
volatile u32 agent_apply = 1;

/* What the rounds keep and report (.bss; user space reads it for the stats). */
u64 agent_round_no;		/* rounds run */
u32 agent_top;			/* --class-bounds auto: the most intensive task, held (top_ref) */
u32 agent_classed_high;		/* the boundaries the last round classed tasks by */
u32 agent_classed_middle;
u32 agent_nr_tasks;		/* network tasks the last round saw (agent_views[]) */
u32 agent_released;		/* ...of which silent past release_ns (step 1) */
u32 agent_round_max;		/* most moves applied in one round (round_moves at the round's end) */
u64 agent_round_ns;		/* ktime the last round took */
u64 agent_round_ns_total;	/* ...all rounds since the start */
u32 agent_nr_moves;		/* moves the last round decided */
struct agent_move agent_moves[MIAMI_AGENT_MOVES_MAX];
u32 agent_nr_over;		/* CPUs above --high-load-pct in the last round, most loaded first */
u32 agent_over[MIAMI_MAX_CPUS];
u32 agent_load[MIAMI_MAX_CPUS];	/* each CPU's load over the last round (input) */
struct agent_view agent_views[NT];
/*
 * Per CPU: the tid of the most intensive class-high task whose IRQ CPU it is, as the last round
 * classed them; 0 none (ties to the lower tid). Placement lets only that one preempt the IRQ
 * CPU (main.bpf.c, enqueue_net()).
 */
s32 agent_irq_top[MIAMI_MAX_CPUS];

/*
 * Every decided move, for the loader's --verbose log: move n is in agent_log[n % size], n below
 * agent_log_head. The loader reads the new ones from memory when it wakes (at least once a
 * second), so no wakeup here: a BPF ring buffer without its wakeup, and without its callback.
 */
u64 agent_log_head;
struct agent_move agent_log[MIAMI_AGENT_LOG];

/* Per task: its share of a CPU, and the repeat filter's and the shed holds' memory. */
struct agent_task {
	u64	rt_ns;		/* CPU time at the sample the next share's span starts from */
	u64	at_ns;		/* ...taken at */
	u64	seen_round;	/* last round it was in the table */
	u64	sent_round;	/* the last move sent for it: round, CPU (-1 none) */
	u64	shed_round;	/* the last shed: round, the CPU it was shed off (-1 none) */
	s32	sent_cpu;
	s32	shed_from;
	s32	util;		/* share of a CPU, hundredths of a percent; -1 not measured */
	u32	pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, NT);
	__type(key, s32);
	__type(value, struct agent_task);
} agent_tasks SEC(".maps");

/* Round scratch. The sort lists hold agent_views[] indexes (SORT_UP, SORT_VIC) or CPUs. */
static u32 up_list[NT], vic_list[NT];
static u32 up_nr, vic_nr, view_nr;
static s32 held_n[MIAMI_MAX_CPUS], held_unknown[MIAMI_MAX_CPUS];
static s64 held_away[MIAMI_MAX_CPUS];
static u32 near_n[MIAMI_MAX_CPUS], top_on[MIAMI_MAX_CPUS];
static u32 irq_top_intens[MIAMI_MAX_CPUS];
static s32 irq_top_tid[MIAMI_MAX_CPUS];
static u32 vic_first[MIAMI_MAX_CPUS], vic_cnt[MIAMI_MAX_CPUS];
static u8 taken[MIAMI_MAX_CPUS], over[MIAMI_MAX_CPUS], wait_cls[MIAMI_MAX_CPUS];
static u64 llc_sum[MIAMI_MAX_LLCS];
static u32 llc_cnt[MIAMI_MAX_LLCS], llc_mean[MIAMI_MAX_LLCS];
static u32 cur_high, cur_middle;	/* the boundaries this round classes by */
static u32 nr_sent;			/* moves decided this round */
static bool adapted;

enum { SORT_UP, SORT_VIC, SORT_OVER };

/* A CPU index masked into the per-CPU arrays: the verifier then needs no range on it, which the
 * compiler's reordering of a bounds check can lose. Callers check the range first. */
#define CI(c) ((u32)(c) & (MIAMI_MAX_CPUS - 1))

static __always_inline struct agent_view *view(u32 i)
{
	return i < NT ? &agent_views[i & (NT - 1)] : NULL;
}

static __always_inline bool cpu_ok(s32 c)
{
	return c >= 0 && c < nr_cpu_ids && c < MIAMI_MAX_CPUS;
}

static __always_inline u32 llc_of(s32 c)
{
	return cpu_ok(c) ? cpu_llc[c] & (MIAMI_MAX_LLCS - 1) : 0;
}

static __always_inline u32 load_of(s32 c)
{
	return cpu_ok(c) ? agent_load[CI(c)] : NO_LOAD;
}

static __always_inline u32 mean_of_llc(s32 c)
{
	return cpu_ok(c) ? llc_mean[llc_of(c)] : NO_LOAD;
}

static __always_inline u32 tier_of(s32 cpu, s32 irq)
{
	if (cpu == irq)
		return MIAMI_TIER_CORE;
	return llc_of(cpu) == llc_of(irq) ? MIAMI_TIER_CACHE : MIAMI_TIER_OTHER;
}

/* ---- sorting ---- */

static __always_inline u32 *sort_slot(u32 kind, u32 i)
{
	if (kind == SORT_UP)
		return i < NT ? &up_list[i & (NT - 1)] : NULL;
	if (kind == SORT_VIC)
		return i < NT ? &vic_list[i & (NT - 1)] : NULL;
	return i < MIAMI_MAX_CPUS ? &agent_over[i & (MIAMI_MAX_CPUS - 1)] : NULL;
}

/*
 * Does @a come before @b? SORT_UP: most intensive first. SORT_VIC: by CPU, then the task that
 * needs affinity least first (class low, tier other, least intensive). SORT_OVER: CPUs, most
 * loaded first. Ties: lower tid or CPU first.
 */
int agent_before(u32 kind, u32 a, u32 b)
{
	struct agent_view *x, *y;

	if (kind == SORT_OVER) {
		u32 la = load_of(a), lb = load_of(b);

		return la != lb ? la > lb : a < b;
	}
	x = view(a);
	y = view(b);
	if (!x || !y)
		return 0;
	if (kind == SORT_VIC) {
		if (x->cpu != y->cpu)
			return x->cpu < y->cpu;
		if (x->cls != y->cls)
			return x->cls > y->cls;
		if (x->tier != y->tier)
			return x->tier > y->tier;
		if (x->intens != y->intens)
			return x->intens < y->intens;
		return x->tid < y->tid;
	}
	if (x->intens != y->intens)
		return x->intens > y->intens;
	return x->tid < y->tid;
}

/*
 * Loop-carried values live in globals, not on the stack: the verifier tracks a stack value
 * through each iteration and tells the iterations apart by it (6.12 gave up on agent_sift()
 * at 10^6 instructions that way); a global's value it does not track. The rounds never run
 * two at a time (one timer, or the loader's one system call).
 */
static u32 sift_root;
static s32 least_cpu;
static u32 least_load;
static u32 round_top;

/* Heap sort's sift-down of @root in a heap of @n (the last in order at the top). */
int agent_sift(u32 kind, u32 root, u32 n)
{
	u32 i;

	sift_root = root;
	bpf_for(i, 0, 32) {
		u32 root = sift_root, child = 2 * root + 1, *r, *c, v;

		if (child >= n)
			break;
		if (child + 1 < n) {
			u32 *c0 = sort_slot(kind, child), *c1 = sort_slot(kind, child + 1);

			if (c0 && c1 && agent_before(kind, *c0, *c1))
				child++;
		}
		r = sort_slot(kind, root);
		c = sort_slot(kind, child);
		if (!r || !c || !agent_before(kind, *r, *c))
			break;
		v = *r;
		*r = *c;
		*c = v;
		sift_root = child;
	}
	return 0;
}

/* Sort the first @n of list @kind, in place. */
int agent_sort(u32 kind, u32 n)
{
	u32 i;

	bpf_for(i, 0, n / 2)
		agent_sift(kind, n / 2 - 1 - i, n);
	bpf_for(i, 1, n) {
		u32 end = n - i, *a = sort_slot(kind, 0), *b = sort_slot(kind, end), v;

		if (!a || !b)
			break;
		v = *a;
		*a = *b;
		*b = v;
		agent_sift(kind, 0, end);
	}
	return 0;
}

/* ---- the boundaries ---- */

/* Move @cur a quarter of the way toward @target (at least 1). */
static __always_inline u32 relax(u32 cur, u32 target)
{
	u32 d = cur > target ? cur - target : target - cur, step = d / 4 ? d / 4 : 1;

	if (cur > target)
		return cur - step;
	return cur < target ? cur + step : cur;
}

/*
 * The narrowest boundaries the agent makes: class low at least [1, 2), middle at least a factor
 * of 2 wide (high >= 2 * middle), high at least [high, 2 * high]. A class squeezed to a width of
 * 1 separates nothing; a factor of 2 keeps tasks whose measured rates wobble by a quarter in one
 * class. --class-bounds auto: high from the top task's intensiveness / 4, middle from / 64.
 */
static __always_inline void auto_bounds(u32 top, u32 *high, u32 *middle)
{
	u32 h = top / MIAMI_AUTO_HIGH_DIV, m = top / MIAMI_AUTO_MIDDLE_DIV;

	h = h < 4 ? 4 : h > MIAMI_INTENS_MAX / 2 ? MIAMI_INTENS_MAX / 2 : h;
	m = m < 2 ? 2 : m > h / 2 ? h / 2 : m;
	*high = h;
	*middle = m;
}

/* --class-bounds auto: the most intensive active task, held: it rises at once and falls a
 * quarter of the way per round, so that one quiet window of the top flow does not reclassify
 * everyone. */
static __always_inline u32 top_ref(u32 now_top)
{
	u32 t = agent_top;

	t = now_top >= t ? now_top : t - (t - now_top + 3) / 4;
	agent_top = t;
	return t;
}

/* Raise @v by a quarter (at least 1), to at most @max, never down. */
static __always_inline u32 raise(u32 v, u32 max)
{
	u32 r = v + (v / 4 ? v / 4 : 1);

	r = r < max ? r : max;
	return r > v ? r : v;
}

/*
 * Step 3's boundary move: raise the lower boundary of @lowest, the lowest class running on the
 * most loaded CPU where network tasks contend, by a quarter. Low has no lower boundary to raise.
 * The raise never passes 3/4 of @top, the most intensive task there: the paper shrinks the
 * window "so that more communication-intensive processes run with better affinity", which needs
 * a more intensive task left to benefit. Without the bound a CPU that stays overloaded (one
 * busy-polling sender is enough) ratchets the boundaries up until its own most intensive task is
 * class low (Table III's bulk process C lost the core tier that way). 3/4, not all of it, so that
 * a rate that wobbles by a quarter is not demoted by the noise; not less, so that tasks less than
 * twice apart can still be told apart (t_agent_cap's five senders, 1000-2500 calls/s, were not
 * with half). Each class keeps its minimum width (middle at most half of high).
 */
static __always_inline void agent_adapt(u32 lowest, u32 top)
{
	u32 cap = (u64)top * 3 / 4;

	if (lowest == MIAMI_CLASS_MIDDLE) {
		u32 m = class_high_min / 2;

		class_middle_min = raise(class_middle_min, cap < m ? cap : m);
	} else if (lowest == MIAMI_CLASS_HIGH) {
		class_high_min = raise(class_high_min, cap < MIAMI_INTENS_MAX / 2 ?
							    cap : MIAMI_INTENS_MAX / 2);
	}
}

/* ---- moves ---- */

static __always_inline struct agent_task *agent_task_of(s32 tid)
{
	struct agent_task *at = bpf_map_lookup_elem(&agent_tasks, &tid), fresh = {
		.sent_cpu = MIAMI_NO_CPU, .shed_from = MIAMI_NO_CPU, .util = -1,
	};

	if (at)
		return at;
	bpf_map_update_elem(&agent_tasks, &tid, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&agent_tasks, &tid);
}

/*
 * Send view @i's task to @cpu unless the same move was sent within MIAMI_REPEAT_ROUNDS: into
 * agent_moves[] (the round's list), policy_moves (where placement takes it, unless --observe)
 * and the log.
 */
static bool agent_send(u32 i, s32 cpu, u32 kind, s32 from)
{
	struct agent_view *t = view(i);
	struct agent_task *at;
	struct agent_move *m;
	u64 round = agent_round_no;
	u32 n = nr_sent;

	if (!t || n >= MIAMI_AGENT_MOVES_MAX)
		return false;
	at = agent_task_of(t->tid);
	if (!at)
		return false;
	if (at->sent_cpu == cpu && round - at->sent_round < MIAMI_REPEAT_ROUNDS)
		return false;
	at->sent_cpu = cpu;
	at->sent_round = round;
	if (kind == MIAMI_MOVE_SHED) {
		at->shed_from = from;
		at->shed_round = round;
	}
	m = &agent_moves[n & (MIAMI_AGENT_MOVES_MAX - 1)];
	m->tid = t->tid;
	m->cpu = cpu;
	m->kind = kind;
	m->from = t->cpu;
	m->irq = t->irq_cpu;
	m->cls = t->cls;
	m->util = t->util;
	m->load_from = load_of(t->cpu);
	m->load_to = load_of(cpu);
	nr_sent = n + 1;
	if (agent_apply) {
		struct policy_move mv = {
			.tid = t->tid, .cpu = cpu, .kind = kind, .round = round,
		};

		mv.seq = __sync_add_and_fetch(&policy_moves_seq, 1);
		bpf_map_update_elem(&policy_moves, &mv.tid, &mv, BPF_ANY);
	}
	agent_log[agent_log_head & (MIAMI_AGENT_LOG - 1)] = *m;
	agent_log_head++;
	return true;
}

/* ---- per-CPU accounting of the network tasks ---- */

/*
 * Count view @t on CPU @c (@sign 1) or take it off (@sign -1): how many network tasks a CPU
 * holds, and the shares of a CPU of those that hold it from elsewhere (their last call ran on
 * another CPU).
 */
static __always_inline void held_add(struct agent_view *t, s32 c, s32 sign)
{
	if (!cpu_ok(c))
		return;
	held_n[CI(c)] += sign;
	if (t->cpu != c) {
		if (t->util >= 0)
			held_away[CI(c)] += sign * (s64)t->util;
		else
			held_unknown[CI(c)] += sign;
	}
}

/*
 * Can CPU @c take view @i's task, its load then below @limit? A CPU that holds no other network
 * task can: a lone task is never shed. The ones it holds: those whose last call ran there, and
 * the class-high tasks whose IRQ CPU it is, wherever they ran last, since placement puts those
 * there whenever it is free (pick_net_cpu()). With any, the load there plus the task's own share
 * of a CPU, plus the shares of those away from it, must stay below @limit: step 3 sheds one of
 * two network tasks off a CPU above --high-load-pct, so a move that lands above it is undone the
 * next round, and an upgrade that lands between the two thresholds as soon as the pair's load
 * wobbles past --high-load-pct. Either way the agent moved a pair back and forth for as long as
 * they ran (t_pair_stable: 2.3-3.7 moves a second). So an upgrade must land below
 * --low-load-pct, the paper's "the loads on the target core is low" after the move, and a shed
 * below --high-load-pct: the two thresholds are the band in which a pair stays put. A share not
 * measured yet fits nowhere but on a CPU of its own.
 */
static __always_inline bool fits(struct agent_view *t, s32 c, u32 limit)
{
	s32 n, unknown;
	s64 away;
	bool own;

	if (!cpu_ok(c))
		return false;
	n = held_n[CI(c)];
	unknown = held_unknown[CI(c)];
	away = held_away[CI(c)];
	own = t->cpu == c || (t->cls == MIAMI_CLASS_HIGH && t->irq_cpu == c);
	if (own) {
		n--;
		if (t->cpu != c) {
			if (t->util >= 0)
				away -= t->util;
			else
				unknown--;
		}
	}
	if (n == 0)
		return true;
	if (t->util < 0 || unknown || agent_load[CI(c)] == NO_LOAD)
		return false;
	return (s64)agent_load[CI(c)] + t->util + away < (s64)limit;
}

/*
 * A shed holds: the agent takes a task back onto the CPU it was shed off only once no other
 * network task is there or has its IRQ CPU there, whatever its class: the pair has ended.
 * fits() alone let it back as soon as the partner's class dipped below high or it ran elsewhere
 * for a round, and placement then brought the partner back too (t_pair_stable: a shed undone by
 * an upgrade half a second later, then shed again).
 */
static __always_inline bool held_off(struct agent_view *t, s32 c)
{
	struct agent_task *at = bpf_map_lookup_elem(&agent_tasks, &t->tid);
	u32 mine = t->cpu == c || t->irq_cpu == c;

	if (!at || at->shed_from != c || !cpu_ok(c) ||
	    agent_round_no - at->shed_round >= MIAMI_SHED_HOLD_ROUNDS)
		return false;
	return near_n[CI(c)] > mine;
}

/*
 * The least loaded CPU below @limit that is not @except and passes @test for view @i, in @c's
 * LLC (@all false) or anywhere (@all true); ties go to the lower id. -1 for none.
 * @test: TEST_OPEN for an upgrade, TEST_FREE for a shed, TEST_FREE_LIGHT for a shed out of the
 * LLC (into a CPU whose LLC is lightly loaded on average).
 */
enum { TEST_OPEN, TEST_FREE, TEST_FREE_LIGHT };

static __always_inline bool cpu_passes(struct agent_view *t, s32 c, u32 test)
{
	if (!cpu_ok(c) || taken[CI(c)])
		return false;
	if (test == TEST_OPEN)
		return !held_off(t, c) && fits(t, c, agent_low_load);
	if (over[CI(c)] || !fits(t, c, agent_high_load))
		return false;
	return test != TEST_FREE_LIGHT || mean_of_llc(c) < agent_low_load;
}

int agent_least_loaded(u32 i, s32 cpu, u32 all, u32 test, s32 except)
{
	struct agent_view *t = view(i);
	u32 first = 0, nr = nr_cpu_ids, j, l;

	least_cpu = MIAMI_NO_CPU;
	least_load = NO_LOAD;
	if (!t)
		return MIAMI_NO_CPU;
	if (!all) {
		l = llc_of(cpu);
		first = llc_first[l];
		nr = llc_nr[l];
	}
	bpf_for(j, 0, nr) {
		u32 k = all ? j : first + j, load;
		s32 c;

		if (k >= MIAMI_MAX_CPUS)
			break;
		c = all ? (s32)k : (s32)llc_cpus[CI(k)];
		if (c == except || !cpu_ok(c))
			continue;
		load = agent_load[CI(c)];
		if (load >= agent_low_load || load == NO_LOAD)
			continue;
		if (load < least_load || (load == least_load && c < least_cpu)) {
			if (!cpu_passes(t, c, test))
				continue;
			least_cpu = c;
			least_load = load;
		}
	}
	return least_cpu;
}

/* ---- the steps ---- */

/* Step 2 for the @k-th candidate (up_list[], most intensive first): true while budget is left. */
int agent_upgrade(u32 k)
{
	struct agent_view *t;
	s32 irq, target = MIAMI_NO_CPU;
	u32 *slot = sort_slot(SORT_UP, k);

	if (nr_sent >= max_moves)
		return 0;
	if (!slot)
		return 0;
	t = view(*slot);
	if (!t)
		return 1;
	irq = t->irq_cpu;
	if (!cpu_ok(irq))
		return 1;
	if (agent_load[CI(irq)] < agent_low_load && agent_load[CI(irq)] != NO_LOAD &&
	    cpu_passes(t, irq, TEST_OPEN))
		target = irq;
	else if (t->tier == MIAMI_TIER_OTHER)
		target = agent_least_loaded(*slot, irq, false, TEST_OPEN, irq);
	if (target >= 0 && agent_send(*slot, target, MIAMI_MOVE_UPGRADE, t->cpu))
		taken[target & (MIAMI_MAX_CPUS - 1)] = 1;
	return 1;
}

/*
 * Step 3 for overloaded CPU @c (the @k-th most loaded): adapt the boundaries for the first such
 * CPU with two or more network tasks, then shed one task off it if they contend.
 */
int agent_shed(s32 c)
{
	u32 first, cnt, j, least_cls = 0, least_tier = 0;
	struct agent_view *v;
	u32 *slot;

	if (!cpu_ok(c))
		return 0;
	first = vic_first[CI(c)];
	cnt = vic_cnt[CI(c)];
	slot = sort_slot(SORT_VIC, first);
	if (!cnt || !slot || !(v = view(*slot)))
		return 0;
	/* The boundaries move for the most loaded CPU where network tasks contend. Its victims
	 * come lowest class first, so the first one's class is the lowest there. */
	if (!adapted && cnt >= 2) {
		adapted = true;
		agent_adapt(v->cls, top_on[CI(c)]);
	}
	/*
	 * Shedding resolves contention between network tasks: the last one on a CPU stays, even
	 * when its own protocol work keeps that CPU busy (a single receiver and its softirq on the
	 * IRQ CPU are MiAMI's best case). Unless that CPU is the IRQ CPU of a task of a higher class
	 * waiting in another tier: then the lone one is contending too, from the other side (in
	 * t_table3 a low-class sender kept the IRQ CPU that the bulk sender, class high, needed).
	 */
	if (nr_sent >= max_moves || (cnt < 2 && wait_cls[CI(c)] >= v->cls))
		return 0;
	/*
	 * Only those that need affinity as little as the first: a victim that cannot move (no
	 * target, or its move was sent within MIAMI_REPEAT_ROUNDS and placement brought it back)
	 * does not send a task of a higher class or a better tier off the CPU in its place (the bulk
	 * sender of Table III, class high on its IRQ CPU, was shed for a paced middle-class sender
	 * whose repeated shed the filter held back: docs/design.md section 9).
	 */
	least_cls = v->cls;
	least_tier = v->tier;
	bpf_for(j, 0, cnt) {
		s32 irq, target;
		u32 idx;

		slot = sort_slot(SORT_VIC, first + j);
		if (!slot || !(v = view(*slot)))
			break;
		if (v->cls != least_cls || v->tier != least_tier)
			break;
		idx = *slot;
		irq = v->irq_cpu;
		/*
		 * Out of the IRQ CPU's LLC only from an LLC overloaded on average (placement drops
		 * such a target otherwise: target_alive()) into one lightly loaded on average: with
		 * every CPU busy, one CPU that read below --low-load-pct for a round is no room worth
		 * a cold cache (t_overload: receivers shed from one saturated LLC into the other lost
		 * up to 16% of their runtime there).
		 */
		target = agent_least_loaded(idx, irq, false, TEST_FREE, c);
		if (target < 0 && mean_of_llc(irq) != NO_LOAD && mean_of_llc(irq) > agent_high_load)
			target = agent_least_loaded(idx, irq, true, TEST_FREE_LIGHT, c);
		if (target >= 0 && agent_send(idx, target, MIAMI_MOVE_SHED, c)) {
			taken[target & (MIAMI_MAX_CPUS - 1)] = 1;
			break;
		}
	}
	return 0;
}

/* ---- inputs ---- */

/*
 * View @i's share of a CPU from its CPU time (@rt_ns) at two of the monitor's samples (@at_ns)
 * at least MIAMI_UTIL_MIN_SPAN_NS apart: the load it brings to a CPU it moves to. The CPU loads
 * cannot tell it: they are per CPU, and two tasks on one CPU split it whatever each would use
 * alone. A thread missing from the previous round's table, or a tid reused (its time went
 * back), starts over.
 */
static __always_inline s32 agent_util(s32 tid, u64 rt_ns, u64 at_ns)
{
	struct agent_task *at = agent_task_of(tid);
	u64 round = agent_round_no;

	if (!at)
		return -1;
	if (at->seen_round + 1 != round || rt_ns < at->rt_ns || at_ns < at->at_ns) {
		at->rt_ns = rt_ns;
		at->at_ns = at_ns;
		at->util = -1;
	} else if (at_ns - at->at_ns >= MIAMI_UTIL_MIN_SPAN_NS) {
		u64 pct = (rt_ns - at->rt_ns) * 10000 / (at_ns - at->at_ns);

		at->util = pct > 10000 ? 10000 : pct;
		at->rt_ns = rt_ns;
		at->at_ns = at_ns;
	}
	at->seen_round = round;
	return at->util;
}

/* The views of the snapshot's tasks (agent.bpf.c snap_tasks[]) at @now; those silent for
 * longer than the whole ms below @stale_ns are left out, as the loader's stats leave them out. */
static void views_from_snapshot(u64 now, u64 stale_ns)
{
	u32 i, nr = snap_nr_tasks;
	u64 max_age_ms = stale_ns / 1000000 - 1;

	view_nr = 0;
	bpf_for(i, 0, nr) {
		struct net_task *nt;
		struct agent_view *v;
		u32 j = view_nr;

		if (i >= NT)
			break;
		nt = &snap_tasks[i & (NT - 1)];
		v = view(j);
		if (!v || nt->tid <= 0 || !nt->last_comm_ns)
			continue;
		v->age_ns = now > nt->last_comm_ns ? now - nt->last_comm_ns : 0;
		if (v->age_ns / 1000000 > max_age_ms)
			continue;
		v->tid = nt->tid;
		v->intens = nt->intens;
		v->irq_cpu = nt->irq_cpu;
		v->cpu = nt->cpu;
		v->util = agent_util(nt->tid, nt->runtime_ns, nt->last_comm_ns);
		view_nr = j + 1;
	}
	agent_nr_tasks = view_nr;
}

/* ---- the round ---- */

/* Step 1: mark the active views; the most intensive of them, the auto boundaries' base. */
static u32 views_classify(void)
{
	u32 i, nr = agent_nr_tasks;

	agent_released = 0;
	round_top = 0;
	bpf_for(i, 0, nr) {
		struct agent_view *t = view(i);

		if (!t)
			break;
		t->active = 0;
		if (!cpu_ok(t->irq_cpu) || !cpu_ok(t->cpu) || !t->intens)
			continue;
		if (t->age_ns / 1000000 >= release_ns / 1000000) {
			agent_released++;
			continue;
		}
		t->active = 1;
		if (t->intens > round_top)
			round_top = t->intens;
	}
	return round_top;
}

/* Per CPU: the network tasks it holds (fits()), those near it (held_off()), the most intensive
 * running there and the best class waiting for it as their IRQ CPU from elsewhere (agent_shed());
 * the upgrade candidates and the victims in lists to sort. */
static void views_count(void)
{
	u32 i, nr = agent_nr_tasks;

	up_nr = 0;
	vic_nr = 0;
	bpf_for(i, 0, nr) {
		struct agent_view *t = view(i);
		s32 c, irq;
		u32 k;

		if (!t)
			break;
		if (!t->active)
			continue;
		c = t->cpu;
		irq = t->irq_cpu;
		if (!cpu_ok(c) || !cpu_ok(irq))
			continue;
		t->cls = class_by(t->intens, cur_high, cur_middle);
		t->tier = tier_of(c, irq);
		held_add(t, c, 1);
		if (t->cls == MIAMI_CLASS_HIGH && irq != c)
			held_add(t, irq, 1);
		if (t->cls == MIAMI_CLASS_HIGH &&
		    (t->intens > irq_top_intens[CI(irq)] ||
		     (t->intens == irq_top_intens[CI(irq)] && t->tid < irq_top_tid[CI(irq)]))) {
			irq_top_intens[CI(irq)] = t->intens;
			irq_top_tid[CI(irq)] = t->tid;
		}
		near_n[CI(c)]++;
		if (irq != c) {
			near_n[CI(irq)]++;
			if (t->cls < wait_cls[CI(irq)])
				wait_cls[CI(irq)] = t->cls;
		}
		if (t->intens > top_on[CI(c)])
			top_on[CI(c)] = t->intens;
		k = vic_nr;
		if (k < NT) {
			vic_list[k & (NT - 1)] = i;
			vic_nr = k + 1;
		}
		k = up_nr;
		if (t->cls == MIAMI_CLASS_HIGH && t->tier != MIAMI_TIER_CORE && k < NT) {
			up_list[k & (NT - 1)] = i;
			up_nr = k + 1;
		}
	}
}

/* Reset the per-CPU scratch; each LLC's mean load over its online CPUs; the overloaded CPUs. */
static void cpus_prepare(void)
{
	u32 c, l;

	agent_nr_over = 0;
	bpf_for(l, 0, MIAMI_MAX_LLCS) {
		llc_sum[l] = 0;
		llc_cnt[l] = 0;
	}
	bpf_for(c, 0, nr_cpu_ids) {
		u32 load;

		if (c >= MIAMI_MAX_CPUS)
			break;
		held_n[CI(c)] = 0;
		held_unknown[CI(c)] = 0;
		held_away[CI(c)] = 0;
		near_n[CI(c)] = 0;
		top_on[CI(c)] = 0;
		irq_top_intens[CI(c)] = 0;
		irq_top_tid[CI(c)] = 0;
		vic_cnt[CI(c)] = 0;
		taken[CI(c)] = 0;
		wait_cls[CI(c)] = CLASS_NONE;
		load = agent_load[CI(c)];
		over[CI(c)] = load != NO_LOAD && load > agent_high_load;
		if (over[CI(c)] && agent_nr_over < MIAMI_MAX_CPUS)
			agent_over[CI(agent_nr_over++)] = c;
		if (load != NO_LOAD) {
			l = llc_of(c);
			llc_sum[l] += load;
			llc_cnt[l]++;
		}
	}
	nr_llcs_overloaded = 0;
	bpf_for(l, 0, MIAMI_MAX_LLCS) {
		u8 o;

		llc_mean[l] = llc_cnt[l] ? llc_sum[l] / llc_cnt[l] : NO_LOAD;
		o = llc_cnt[l] && llc_mean[l] > agent_high_load;
		if (llc_overloaded[l] != o)
			llc_overloaded[l] = o;
		nr_llcs_overloaded += o;
	}
}

/* Each CPU's run of victims in the sorted vic_list[]. */
static void victims_index(void)
{
	u32 i, nr = vic_nr;

	bpf_for(i, 0, nr) {
		struct agent_view *t;
		s32 c;

		if (i >= NT)
			break;
		t = view(vic_list[i]);
		if (!t || !cpu_ok(t->cpu))
			continue;
		c = t->cpu;
		if (!vic_cnt[CI(c)])
			vic_first[CI(c)] = i;
		vic_cnt[CI(c)]++;
	}
}

/*
 * One round on agent_load[] and agent_views[]: steps 1-3 and the boundaries. The moves go to
 * agent_moves[], policy_moves (unless --observe) and the log; the boundaries to class_high_min
 * and class_middle_min, which placement reads.
 */
static void agent_round(void)
{
	u32 top, base_high = 0, base_middle = 0, i, nr;
	bool has_base = false;

	agent_round_no++;
	/* Moves placement applied since the last round; the swap refills its budget. */
	nr = __sync_lock_test_and_set(&round_moves, 0);
	if (nr > agent_round_max)
		agent_round_max = nr;
	if (__sync_lock_test_and_set(&agent_reset, 0)) {
		class_high_min = agent_init_high ? agent_init_high : MIAMI_AUTO_START_HIGH;
		class_middle_min = agent_init_high ? agent_init_middle : MIAMI_AUTO_START_MIDDLE;
		agent_top = 0;
	}
	nr_sent = 0;
	adapted = false;

	top = views_classify();
	/* The boundaries to return to: --class-bounds, or derived from the top task. The first
	 * round that sees a task starts from the derived ones. */
	if (agent_init_high) {
		base_high = agent_init_high;
		base_middle = agent_init_middle;
		has_base = true;
	} else {
		bool first = !agent_top;

		top = top_ref(top);
		if (top) {
			auto_bounds(top, &base_high, &base_middle);
			has_base = true;
			if (first) {
				class_high_min = base_high;
				class_middle_min = base_middle;
			}
		}
	}
	cur_high = class_high_min;
	cur_middle = class_middle_min;
	agent_classed_high = cur_high;
	agent_classed_middle = cur_middle;

	cpus_prepare();
	views_count();
	bpf_for(i, 0, nr_cpu_ids) {
		if (i >= MIAMI_MAX_CPUS)
			break;
		agent_irq_top[CI(i)] = irq_top_tid[CI(i)];
	}

	/* Step 2: upgrade, most intensive first. */
	agent_sort(SORT_UP, up_nr);
	nr = up_nr;
	bpf_for(i, 0, nr) {
		if (!agent_upgrade(i))
			break;
	}

	/* Step 3: shed off overloaded CPUs, most loaded first, and adapt the boundaries. */
	agent_sort(SORT_VIC, vic_nr);
	victims_index();
	agent_sort(SORT_OVER, agent_nr_over);
	nr = agent_nr_over;
	bpf_for(i, 0, nr) {
		if (i >= MIAMI_MAX_CPUS)
			break;
		agent_shed(agent_over[CI(i)]);
	}

	/* A boundary raised for an overload comes back as soon as no CPU is overloaded by two or
	 * more network tasks, whatever else is busy: a hog, or a lone receiver saturating its own
	 * IRQ CPU, raises nothing and holds nothing up. */
	if (!adapted && has_base) {
		u32 h = relax(class_high_min, base_high), m = relax(class_middle_min, base_middle);
		u32 cap = h / 2 > base_middle ? h / 2 : base_middle;

		cap = cap < h - 1 ? cap : h - 1;
		class_high_min = h;
		class_middle_min = m < cap ? m : cap;
	}
	agent_nr_moves = nr_sent;
	if (nr_sent && agent_apply)
		policy_moves_gen++;
}

/* Wrap agent_round() with its timing. */
static void agent_round_timed(void)
{
	u64 t0 = bpf_ktime_get_ns(), dt;

	agent_round();
	dt = bpf_ktime_get_ns() - t0;
	agent_round_ns = dt;
	agent_round_ns_total += dt;
}

/*
 * One round on inputs user space gives (BPF_PROG_TEST_RUN): the loads in agent_load[] always;
 * the tasks in agent_views[] (MIAMI_ROUND_VIEWS: tests/policy.rs) or from a snapshot of
 * net_tasks taken here at @arg->now_ns (the loader where the kernel's CPU time counters cannot
 * be read in BPF, and tests of the shares). Not the timer's path, which needs no system call.
 */
SEC("syscall")
int miami_agent_round(struct agent_round_arg *arg)
{
	if (!(arg->flags & MIAMI_ROUND_VIEWS)) {
		snap_tasks_take(arg->now_ns, arg->stale_ns);
		views_from_snapshot(arg->now_ns, arg->stale_ns);
	} else {
		agent_nr_tasks = arg->nr_views < NT ? arg->nr_views : NT;
	}
	agent_round_timed();
	return 0;
}

/* ---- the timer ---- */

struct agent_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct agent_timer);
} agent_timer SEC(".maps");

/* Period of the rounds (--interval-ms), read at every round: a SIGHUP's new one takes effect
 * at the next. */
volatile u64 agent_interval_ns = 100000000;
/* A net_tasks entry silent this long is stale: the snapshot deletes it (user space writes it). */
volatile u64 agent_stale_ns = 5000000000ULL;

static int agent_tick(void *map, int *key, struct agent_timer *at)
{
	u64 now = bpf_ktime_get_ns();

	snap_cpu_loads(now);
	snap_tasks_take(now, agent_stale_ns);
	views_from_snapshot(now, agent_stale_ns);
	agent_round_timed();
	bpf_timer_start(&at->timer, agent_interval_ns, 0);
	return 0;
}

/* Start the rounds (user space, once the programs are attached): the first one at once. */
SEC("syscall")
int miami_agent_start(void *ctx)
{
	struct agent_timer *at;
	u32 key = 0;
	int ret;

	at = bpf_map_lookup_elem(&agent_timer, &key);
	if (!at)
		return -ENOENT;
	ret = bpf_timer_init(&at->timer, &agent_timer, CLOCK_MONOTONIC);
	if (ret)
		return ret;
	ret = bpf_timer_set_callback(&at->timer, agent_tick);
	if (ret)
		return ret;
	return bpf_timer_start(&at->timer, 0, 0);
}
