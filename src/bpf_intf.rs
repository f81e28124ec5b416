// SPDX-License-Identifier: GPL-2.0
//! bindgen output of bpf/intf.h: constants, stat ids and shared structs.
#![allow(clippy::all)]
#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code
)]
include!(concat!(env!("OUT_DIR"), "/bpf_intf.rs"));
