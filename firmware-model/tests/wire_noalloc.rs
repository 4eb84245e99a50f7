//! Parsing is zero-copy: `parse_frame` and every getter run without a heap allocation.
//!
//! A counting global allocator (per thread, so other test threads do not interfere)
//! wraps the system allocator. This file holds a single test on purpose.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use roce_model::wire::*;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

#[test]
fn parse_and_getters_do_not_allocate() {
    let mut frames = Vec::new();
    for op in Opcode::ALL {
        let mut b = FrameBuilder::new(
            EthernetFields { vlan: Some(Vlan::default()), ..EthernetFields::default() },
            Ipv6Fields::default(),
            BthFields::new(op, 0x11, 1),
        );
        b.ext = ExtHeaders {
            deth: op.has_ext_header(ExtHeaderKind::Deth).then_some(DethFields::default()),
            reth: op.has_ext_header(ExtHeaderKind::Reth).then_some(RethFields::default()),
            atomic_eth: op.has_ext_header(ExtHeaderKind::AtomicEth).then_some(AtomicEthFields::default()),
            aeth: op.has_ext_header(ExtHeaderKind::Aeth).then_some(AethFields::default()),
            atomic_ack_eth: op.has_ext_header(ExtHeaderKind::AtomicAckEth).then_some(AtomicAckEthFields::default()),
            immdt: op.has_ext_header(ExtHeaderKind::ImmDt).then_some(ImmDtFields::default()),
            ieth: op.has_ext_header(ExtHeaderKind::Ieth).then_some(IethFields::default()),
        };
        let payload = if op.has_payload() { &[7u8; 1001][..] } else { &[] };
        frames.push(b.build(payload).unwrap());
    }
    let bad = vec![0u8; 13];
    let n = allocations(|| {
        for f in &frames {
            let p = parse_frame(f).unwrap();
            let r = p.require_roce().unwrap();
            black_box((p.ip_offset(), p.icrc_offset(), p.eth().fields(), p.ipv6()));
            black_box((r.bth().fields(), r.ext_headers(), r.payload(), r.icrc()));
        }
        black_box(parse_frame(&bad).unwrap_err());
    });
    assert_eq!(n, 0, "parsing allocated {n} times");
    // The counter does count.
    assert!(allocations(|| drop(black_box(vec![1u8; 10]))) > 0);
}
