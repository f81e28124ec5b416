// SPDX-License-Identifier: GPL-2.0
//! The instance lock (src/scheduler/host.rs): one scx_miami per host. flock() locks belong to an
//! open file, so a second lock_instance() in this process conflicts like a second process would.

use miami::scheduler::lock_instance;

#[test]
fn a_second_instance_is_refused_and_named_until_the_first_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scx_miami.lock");
    // A pid left by an earlier holder is no lock: the file's content does not count.
    std::fs::write(&path, "999999999\n").unwrap();

    let first = lock_instance(&path).expect("a free lock is taken");
    let pid = std::process::id().to_string();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{pid}\n"));

    let msg = format!(
        "{:#}",
        lock_instance(&path).expect_err("a held lock is refused")
    );
    assert!(
        msg.contains(&format!("another scx_miami is running (pid {pid})")),
        "{msg}"
    );
    assert!(msg.contains(path.to_str().unwrap()), "{msg}");
    assert!(msg.contains("--monitor or --tui"), "{msg}");

    drop(first);
    let _again = lock_instance(&path).expect("the lock is free once its holder is gone");
}

#[test]
fn a_lock_that_cannot_be_opened_names_its_path() {
    let msg = format!(
        "{:#}",
        lock_instance(std::path::Path::new("/nonexistent-dir/scx_miami.lock")).unwrap_err()
    );
    assert!(
        msg.contains("opening the instance lock /nonexistent-dir/scx_miami.lock"),
        "{msg}"
    );
}
