//! cargo-fuzz target: arbitrary bytes into `roce_model::wire::parse_frame` and the
//! transport parser, with every getter exercised and parsed frames rebuilt and compared.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    roce_model_fuzz::parse_frame_body(data);
});
