//! Model of `hdl/rtl/roce_dma_axi.sv`: the engine's DMA ports on an AXI4 master (512-bit
//! data). Transaction-level: which bursts a transfer becomes, which W beats (data, strobes,
//! WLAST) a write makes, what lands in host memory, and which beats the engine gets back for
//! a read given the AXI beats the slave returned (data and error flag per beat).

use crate::engine::HostMem;

/// Bytes per data beat.
pub const BEAT: usize = 64;

/// One AR or AW burst: a 64-byte aligned address and a beat count (ARLEN + 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Burst {
    /// Address of the first beat (64-byte aligned).
    pub addr: u64,
    /// Beats (1..=max_burst).
    pub beats: u16,
}

/// AXI beats a transfer of `len` bytes at `addr` covers.
pub fn axi_beats(addr: u64, len: usize) -> usize {
    ((addr % BEAT as u64) as usize + len).div_ceil(BEAT)
}

/// Beats the engine exchanges for `len` bytes (lane-0 aligned).
pub fn data_beats(len: usize) -> usize {
    len.div_ceil(BEAT)
}

/// The bursts of a transfer: whole beats from the beat holding `addr` to the one holding
/// the last byte, cut so no burst crosses a `max_burst` x 64-byte boundary (`max_burst` a
/// power of two up to 64, so never a 4 KiB boundary).
pub fn bursts(addr: u64, len: usize, max_burst: u16) -> Vec<Burst> {
    let mb = u64::from(max_burst.max(1));
    let mut b = addr / BEAT as u64;
    let mut left = axi_beats(addr, len) as u64;
    let mut v = Vec::new();
    while left > 0 {
        let n = left.min(mb - b % mb);
        v.push(Burst { addr: b * BEAT as u64, beats: n as u16 });
        b += n;
        left -= n;
    }
    v
}

/// One beat returned to the engine on `m_dma_rd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdBeat {
    /// `tdata`, lane 0 = the beat's first byte; lanes past the read's end are zero.
    pub data: [u8; BEAT],
    /// `tuser`: the read failed at or before this beat.
    pub err: bool,
    /// `tlast`.
    pub last: bool,
}

/// The beats the engine gets for a read of `len` bytes at `addr`, given the AXI beats the
/// slave returned for it in order (data, error): output beat k holds bytes 64k.. of the
/// read (from the AXI beat stream at offset addr % 64), and is marked failed if any AXI
/// beat it or an earlier output beat used was.
pub fn read_return(addr: u64, len: usize, axi: &[([u8; BEAT], bool)]) -> Vec<RdBeat> {
    let off = (addr % BEAT as u64) as usize;
    let ab = axi_beats(addr, len);
    let ob = data_beats(len);
    let byte = |p: usize| axi.get(p / BEAT).map_or(0, |b| b.0[p % BEAT]);
    let mut out = Vec::with_capacity(ob);
    let mut err = false;
    let mut used = 0usize; // AXI beats whose error flag is in `err`
    for k in 0..ob {
        // the AXI beat holding the output beat's last lane (lane 63)
        let last_used = (off + BEAT * k).div_ceil(BEAT).min(ab.saturating_sub(1));
        while used <= last_used {
            err |= axi.get(used).is_some_and(|b| b.1);
            used += 1;
        }
        let mut data = [0u8; BEAT];
        for (i, d) in data.iter_mut().enumerate() {
            if BEAT * k + i < len {
                *d = byte(off + BEAT * k + i);
            }
        }
        out.push(RdBeat { data, err, last: k + 1 == ob });
    }
    out
}

/// One W beat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrBeat {
    /// `wdata` (lanes whose strobe is clear are zero).
    pub data: [u8; BEAT],
    /// `wstrb`.
    pub strb: u64,
    /// `wlast`.
    pub last: bool,
}

/// The W beats of a write of `data` at `addr`, burst after burst (see [`bursts`]).
pub fn write_beats(addr: u64, data: &[u8], max_burst: u16) -> Vec<WrBeat> {
    let off = (addr % BEAT as u64) as usize;
    let mut out = Vec::new();
    let mut j = 0usize;
    for b in bursts(addr, data.len(), max_burst) {
        for i in 0..usize::from(b.beats) {
            let mut w = WrBeat { data: [0; BEAT], strb: 0, last: i + 1 == usize::from(b.beats) };
            for lane in 0..BEAT {
                let p = BEAT * j + lane; // position in the beat stream
                if p >= off && p - off < data.len() {
                    w.data[lane] = data[p - off];
                    w.strb |= 1 << lane;
                }
            }
            out.push(w);
            j += 1;
        }
    }
    out
}

/// Host memory after the W beats of one burst starting at `burst_addr`: the strobed bytes.
pub fn apply_burst(mem: &mut HostMem, burst_addr: u64, beats: &[WrBeat]) {
    for (i, w) in beats.iter().enumerate() {
        let base = burst_addr + (BEAT * i) as u64;
        for lane in 0..BEAT {
            if w.strb >> lane & 1 == 1 {
                mem.write(base + lane as u64, &[w.data[lane]]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_split_at_the_window_and_4k() {
        assert_eq!(bursts(0x1000, 64, 64), vec![Burst { addr: 0x1000, beats: 1 }]);
        assert_eq!(bursts(0xFC0 + 8, 100, 64), vec![Burst { addr: 0xFC0, beats: 1 }, Burst { addr: 0x1000, beats: 1 }]);
        let b = bursts(0x10, 4096, 64);
        assert_eq!(b, vec![Burst { addr: 0, beats: 64 }, Burst { addr: 0x1000, beats: 1 }]);
        let b = bursts(0x40, 512, 4);
        assert_eq!(b.iter().map(|x| x.beats).collect::<Vec<_>>(), vec![3, 4, 1]);
    }

    #[test]
    fn write_then_read_round_trip() {
        let data: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        for addr in [0x1000u64, 0x1001, 0x103F, 0x1FF0] {
            let mut mem = HostMem::new();
            let beats = write_beats(addr, &data, 4);
            let mut k = 0;
            for b in bursts(addr, data.len(), 4) {
                let n = usize::from(b.beats);
                assert!(beats[k + n - 1].last);
                apply_burst(&mut mem, b.addr, &beats[k..k + n]);
                k += n;
            }
            assert_eq!(mem.read_vec(addr, data.len()), data);
            assert_eq!(mem.read_vec(addr - 1, 1), vec![0]);
            let axi: Vec<([u8; BEAT], bool)> = (0..axi_beats(addr, data.len()))
                .map(|i| {
                    let mut d = [0u8; BEAT];
                    mem.read(addr / 64 * 64 + 64 * i as u64, &mut d);
                    (d, false)
                })
                .collect();
            let r = read_return(addr, data.len(), &axi);
            let got: Vec<u8> = r.iter().flat_map(|b| b.data).take(data.len()).collect();
            assert_eq!(got, data);
            assert!(r.last().is_some_and(|b| b.last && b.data[300 % 64..].iter().all(|&x| x == 0)));
        }
    }

    #[test]
    fn errors_are_sticky_from_the_first_beat_that_used_them() {
        // offset 32, 200 bytes: 4 AXI beats, 4 output beats; AXI beat 2 failed
        let axi: Vec<([u8; BEAT], bool)> = (0..4).map(|i| ([i as u8; BEAT], i == 2)).collect();
        let r = read_return(32, 200, &axi);
        assert_eq!(r.iter().map(|b| b.err).collect::<Vec<_>>(), vec![false, true, true, true]);
    }
}
