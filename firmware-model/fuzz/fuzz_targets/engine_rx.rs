//! Arbitrary packets into a live engine: no panic, no DMA outside the registered memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    roce_model_fuzz::engine_rx::engine_rx_body(data);
});
