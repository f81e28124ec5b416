// SPDX-License-Identifier: GPL-2.0
//! Compiles bpf/*.bpf.c into one linked object and its libbpf-rs skeleton, and runs bindgen on
//! bpf/intf.h, the only header shared between BPF and Rust; records the git commit for
//! --version.

fn main() {
    // The commit for --version ("" outside a git checkout, e.g. a crate tarball). Rerun when
    // HEAD or the branch it names moves.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let sha = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=MIAMI_GIT_SHA={sha}");
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let f = std::path::Path::new(&dir).join(&r);
            if f.exists() {
                println!("cargo:rerun-if-changed={}", f.display());
            }
        }
    }

    scx_cargo::BpfBuilder::new()
        .unwrap()
        .enable_intf("bpf/intf.h", "bpf_intf.rs")
        .enable_skel("bpf/main.bpf.c", "bpf")
        .add_source("bpf/netmon.bpf.c")
        .add_source("bpf/agent.bpf.c")
        .add_source("bpf/policy.bpf.c")
        .compile_link_gen()
        .unwrap();
}
