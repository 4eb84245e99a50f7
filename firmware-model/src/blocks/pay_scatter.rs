//! Model of `hdl/rtl/roce_pay_scatter.sv`: a payload packet cut into DMA writes, one per
//! written segment. Segments are consecutive from payload byte 0; bytes past the payload
//! read as zero (the HDL's window after a short packet); bytes after the last segment are
//! discarded. Operation-level: the lockstep test compares the writes in order.

/// One segment of a command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// Write it (else skip its bytes).
    pub write: bool,
    /// Bytes.
    pub len: u16,
    /// DMA address of its first byte.
    pub addr: u64,
}

/// The DMA writes (address, bytes) a command makes of `payload`. Empty segments make none.
pub fn scatter(payload: &[u8], segs: &[Segment]) -> Vec<(u64, Vec<u8>)> {
    let mut off = 0usize;
    let mut out = Vec::new();
    for s in segs {
        let n = usize::from(s.len);
        if s.write && n > 0 {
            let bytes = (off..off + n).map(|i| payload.get(i).copied().unwrap_or(0)).collect();
            out.push((s.addr, bytes));
        }
        off += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_segments_and_short_payload() {
        let p: Vec<u8> = (1..=10).collect();
        let segs = [
            Segment { write: true, len: 3, addr: 0x100 },
            Segment { write: false, len: 2, addr: 0 },
            Segment { write: true, len: 0, addr: 0x300 },
            Segment { write: true, len: 7, addr: 0x200 },
        ];
        assert_eq!(scatter(&p, &segs), vec![(0x100, vec![1, 2, 3]), (0x200, vec![6, 7, 8, 9, 10, 0, 0])]);
    }
}
