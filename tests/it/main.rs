// SPDX-License-Identifier: GPL-2.0
//! The host tests, one module per area, in one test binary: each integration test file used to
//! be a binary of its own, and linking eleven of them (thin LTO, libbpf) took most of the 89 s
//! that `cargo test --release` spent in a `make test` (stop 57). `cargo test --test it MODULE::`
//! runs one area.

mod cli;
mod config;
mod instance_lock;
mod irq;
mod maps;
mod policy;
mod snapshot;
mod stats;
mod stats_server;
mod topology;
mod tui;
