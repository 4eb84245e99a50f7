//! Descriptor layouts of the host contract: random round trips, the error on every kind of
//! bad image, the layout invariants (no overlap, fits, natural alignment), byte images
//! written out by hand from the specification, and the ibverbs numbering.

#[path = "contract_strategies.rs"]
mod strategies;

use proptest::prelude::*;
use roce_model::contract::*;
use strategies::*;

// ---- round trips -------------------------------------------------------------------------

fn round_trip<D: Descriptor>(d: &D) -> Result<(), TestCaseError> {
    prop_assert_eq!(d.validate(), Ok(()));
    let img = d.to_vec();
    prop_assert_eq!(img.len(), D::SIZE);
    let back = D::decode(&img).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(&back, d);
    prop_assert_eq!(back.to_vec(), img.clone());
    // Trailing bytes are ignored.
    let mut longer = img.clone();
    longer.extend_from_slice(&[0xA5; 7]);
    prop_assert_eq!(&D::decode(&longer).map_err(|e| TestCaseError::fail(format!("{e}")))?, d);
    // Every reserved byte is zero in the image.
    for r in D::LAYOUT.reserved() {
        prop_assert!(img[r.clone()].iter().all(|&b| b == 0), "{}: reserved {:?} not zero", D::LAYOUT.name, r);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sge_round_trip(d in sge()) { round_trip(&d)?; prop_assert_eq!(Sge::decode(&d.encode()), Ok(d)); }

    #[test]
    fn sq_wqe_round_trip(d in sq_wqe()) { round_trip(&d)?; prop_assert_eq!(SqWqe::decode(&d.encode()), Ok(d)); }

    #[test]
    fn rq_wqe_round_trip(d in rq_wqe()) { round_trip(&d)?; prop_assert_eq!(RqWqe::decode(&d.encode()), Ok(d)); }

    #[test]
    fn cqe_round_trip(d in cqe()) { round_trip(&d)?; prop_assert_eq!(Cqe::decode(&d.encode()), Ok(d)); }

    #[test]
    fn qp_ctx_round_trip(d in qp_ctx()) { round_trip(&d)?; prop_assert_eq!(QpCtx::decode(&d.encode()), Ok(d)); }

    #[test]
    fn cq_ctx_round_trip(d in cq_ctx()) { round_trip(&d)?; prop_assert_eq!(CqCtx::decode(&d.encode()), Ok(d)); }

    #[test]
    fn mr_ctx_round_trip(d in mr_ctx()) { round_trip(&d)?; prop_assert_eq!(MrCtx::decode(&d.encode()), Ok(d)); }

    /// Any byte image either decodes to a value that encodes back to the same bytes, or
    /// fails with an error naming a field or reserved byte of that layout. Never panics.
    #[test]
    fn random_images(img in proptest::collection::vec(any::<u8>(), 128), sanitize in any::<bool>()) {
        check_random::<Sge>(&img, sanitize)?;
        check_random::<SqWqe>(&img, sanitize)?;
        check_random::<RqWqe>(&img, sanitize)?;
        check_random::<Cqe>(&img, sanitize)?;
        check_random::<QpCtx>(&img, sanitize)?;
        check_random::<CqCtx>(&img, sanitize)?;
        check_random::<MrCtx>(&img, sanitize)?;
    }
}

fn check_random<D: Descriptor>(img: &[u8], sanitize: bool) -> Result<(), TestCaseError> {
    let l = D::LAYOUT;
    let mut img = img[..l.size].to_vec();
    if sanitize {
        // Clear the reserved bytes and the reserved upper bits of integer fields, so that
        // only enum codes and flag bits can still be wrong.
        for r in l.reserved() {
            img[r].fill(0);
        }
        for f in l.fields {
            if f.bits < 8 * f.size as u32 && matches!(f.kind, FieldKind::Uint) {
                let mut v = 0u64;
                for (i, b) in img[f.offset..f.offset + f.size].iter().enumerate() {
                    v |= u64::from(*b) << (8 * i);
                }
                v &= (1u64 << f.bits) - 1;
                for i in 0..f.size {
                    img[f.offset + i] = (v >> (8 * i)) as u8;
                }
            }
        }
    }
    match D::decode(&img) {
        Ok(d) => prop_assert_eq!(d.to_vec(), img),
        Err(ContractError::ReservedByte { layout, offset, .. }) => {
            prop_assert!(!sanitize);
            prop_assert_eq!(layout, l.name);
            prop_assert!(l.reserved().iter().any(|r| r.contains(&offset)));
        }
        Err(ContractError::UnknownCode { field, .. } | ContractError::ReservedBits { field, .. }) => {
            let (layout, name) = field.split_once('.').expect("Layout.field");
            // Nested descriptors report their own layout name.
            prop_assert!(
                layout == l.name || LAYOUTS.iter().any(|x| x.name == layout),
                "error names unknown layout {}",
                layout
            );
            let owner = LAYOUTS.iter().find(|x| x.name == layout).expect("layout");
            prop_assert!(owner.field(name).is_some(), "error names unknown field {}", field);
        }
        Err(e) => prop_assert!(false, "unexpected {e:?}"),
    }
    Ok(())
}

// ---- errors -------------------------------------------------------------------------------

/// A layout, a valid image of it, and its decoder.
type Sample = (LayoutDesc, Vec<u8>, fn(&[u8]) -> Result<(), ContractError>);

fn samples() -> Vec<Sample> {
    fn dec<D: Descriptor>(b: &[u8]) -> Result<(), ContractError> {
        D::decode(b).map(|_| ())
    }
    let cqe = Cqe { status: CqeStatus::RemAccessErr, opcode: CqeOpcode::RecvInv, qpn: 5, ..Cqe::default() };
    let qp = QpCtx { qp_type: QpType::Rc, path_mtu: PathMtu::Mtu1024, ..QpCtx::default() };
    vec![
        (Sge::LAYOUT, Sge::default().to_vec(), dec::<Sge>),
        (SqWqe::LAYOUT, SqWqe::default().to_vec(), dec::<SqWqe>),
        (RqWqe::LAYOUT, RqWqe::default().to_vec(), dec::<RqWqe>),
        (Cqe::LAYOUT, cqe.to_vec(), dec::<Cqe>),
        (QpCtx::LAYOUT, qp.to_vec(), dec::<QpCtx>),
        (CqCtx::LAYOUT, CqCtx::default().to_vec(), dec::<CqCtx>),
        (MrCtx::LAYOUT, MrCtx::default().to_vec(), dec::<MrCtx>),
    ]
}

#[test]
fn every_sample_decodes() {
    for (l, img, dec) in samples() {
        assert_eq!(dec(&img), Ok(()), "{}", l.name);
    }
}

#[test]
fn too_short() {
    for (l, img, dec) in samples() {
        for n in 0..l.size {
            assert_eq!(
                dec(&img[..n]),
                Err(ContractError::TooShort { layout: l.name, need: l.size, got: n }),
                "{} with {n} bytes",
                l.name
            );
        }
    }
}

#[test]
fn reserved_bytes_are_rejected() {
    let mut checked = 0;
    for (l, img, dec) in samples() {
        for r in l.reserved() {
            for offset in r {
                let mut bad = img.clone();
                bad[offset] = 0x40;
                assert_eq!(
                    dec(&bad),
                    Err(ContractError::ReservedByte { layout: l.name, offset, value: 0x40 }),
                    "{} byte {offset}",
                    l.name
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 100, "{checked}");
}

#[test]
fn reserved_bits_unknown_codes_and_undefined_flags_name_the_field() {
    let mut checked = 0;
    for (l, img, dec) in samples() {
        for f in l.fields {
            let field = format!("{}.{}", l.name, f.name);
            let mut bad = img.clone();
            match f.kind {
                FieldKind::Uint | FieldKind::Bool if f.bits < 8 * f.size as u32 => {
                    // Set the lowest reserved bit.
                    bad[f.offset + (f.bits / 8) as usize] |= 1 << (f.bits % 8);
                }
                FieldKind::Enum(e) => {
                    let unused = (0..=255u8).find(|c| !e.variants.iter().any(|v| v.code == *c)).expect("free code");
                    bad[f.offset] = unused;
                }
                FieldKind::Bits(b) => {
                    let defined = b.bits.iter().fold(0u64, |m, x| m | (((1u64 << x.width) - 1) << x.lsb));
                    let Some(bit) = (0..b.width).find(|i| defined & (1 << i) == 0) else { continue };
                    bad[f.offset + (bit / 8) as usize] |= 1 << (bit % 8);
                }
                _ => continue,
            }
            let err = dec(&bad).expect_err(&field);
            let named = match err {
                ContractError::ReservedBits { field, .. } | ContractError::UnknownCode { field, .. } => field,
                e => panic!("{field}: unexpected {e:?}"),
            };
            assert_eq!(named, field);
            checked += 1;
        }
    }
    assert!(checked >= 25, "{checked}");
}

#[test]
fn enum_try_from_names_the_type() {
    fn check<T: TryFrom<u8, Error = ContractError> + Copy + PartialEq + core::fmt::Debug + Into<u8>>(
        all: &[T],
        name: &'static str,
    ) {
        for c in 0..=255u8 {
            match T::try_from(c) {
                Ok(v) => {
                    assert!(all.contains(&v));
                    assert_eq!(v.into(), c);
                }
                Err(e) => {
                    assert_eq!(e, ContractError::UnknownCode { field: name, value: c.into() });
                    assert!(!all.iter().any(|v| (*v).into() == c));
                }
            }
        }
    }
    check(SqOpcode::ALL, "SqOpcode");
    check(CqeOpcode::ALL, "CqeOpcode");
    check(CqeStatus::ALL, "CqeStatus");
    check(QpState::ALL, "QpState");
    check(QpType::ALL, "QpType");
    check(PathMtu::ALL, "PathMtu");
    check(Encap::ALL, "Encap");
    check(CmdOpcode::ALL, "CmdOpcode");
    check(CmdErrorCode::ALL, "CmdErrorCode");
}

#[test]
fn validate_reports_overflow_and_encode_cuts() {
    let cqe = Cqe { qpn: 0x0100_0001, ..Cqe::default() };
    assert_eq!(cqe.validate(), Err(ContractError::Overflow { field: "Cqe.qpn", value: 0x0100_0001, width: 24 }));
    assert_eq!(Cqe::decode(&cqe.encode()).map(|c| c.qpn), Ok(1));
    let qp = QpCtx { retry_cnt: 8, ..QpCtx::default() };
    assert_eq!(qp.validate(), Err(ContractError::Overflow { field: "QpCtx.retry_cnt", value: 8, width: 3 }));
    let qp = QpCtx { vlan: VlanTag { vid: 4096, pcp: 0, valid: true }, ..QpCtx::default() };
    assert!(matches!(qp.validate(), Err(ContractError::Overflow { field: "QpCtx.vlan", .. })));
    assert_eq!(QpCtx::default().validate(), Ok(()));
}

#[test]
fn sq_inline_flag_follows_data() {
    let mut d = [0u8; SQ_DATA_BYTES];
    d[..5].copy_from_slice(b"hello");
    // flags say nothing about INLINE: the encoder sets it from data.
    let w = SqWqe { total_len: 5, data: SqData::Inline(d), flags: SqFlags::SIGNALED, ..SqWqe::default() };
    let img = w.encode();
    assert_eq!(img[9], 0x05);
    let back = SqWqe::decode(&img).unwrap();
    assert_eq!(back.flags, SqFlags::SIGNALED | SqFlags::INLINE);
    assert_eq!(back.inline_payload(), Some(&b"hello"[..]));
    assert_eq!(back.sges(), None);
    // And clears it for an SGE list.
    let w = SqWqe { flags: SqFlags::INLINE | SqFlags::FENCE, num_sge: 1, ..SqWqe::default() };
    let img = w.encode();
    assert_eq!(img[9], 0x08);
    assert_eq!(SqWqe::decode(&img).unwrap().sges().map(<[Sge]>::len), Some(1));
}

// ---- layout invariants --------------------------------------------------------------------

/// Natural alignment of a field: its own size for integers (and flag words), 1 for bytes,
/// the largest member alignment for nested layouts.
fn align(f: &LayoutField) -> usize {
    match f.kind {
        FieldKind::Uint | FieldKind::Bits(_) => f.size,
        FieldKind::Bool | FieldKind::Enum(_) | FieldKind::Bytes => 1,
        FieldKind::Struct(l) | FieldKind::Array(l, _) => layout_align(l),
        FieldKind::Union(alts) => alts.iter().map(align).max().unwrap_or(1),
    }
}

fn layout_align(l: &LayoutDesc) -> usize {
    l.fields.iter().map(align).max().unwrap_or(1)
}

fn check_fields(what: &str, size: usize, fields: &[LayoutField]) {
    let mut end = 0;
    let mut names = std::collections::HashSet::new();
    for f in fields {
        assert!(names.insert(f.name), "{what}: duplicate field {}", f.name);
        assert!(f.offset >= end, "{what}.{}: overlaps the previous field or out of order", f.name);
        assert!(f.offset + f.size <= size, "{what}.{}: does not fit in {size} bytes", f.name);
        assert_eq!(f.offset % align(f), 0, "{what}.{}: offset {} not aligned to {}", f.name, f.offset, align(f));
        assert!(f.bits >= 1 && f.bits <= 8 * f.size as u32, "{what}.{}: bits {}", f.name, f.bits);
        match f.kind {
            FieldKind::Uint | FieldKind::Bits(_) => {
                assert!([1, 2, 4, 8].contains(&f.size), "{what}.{}", f.name)
            }
            FieldKind::Bool | FieldKind::Enum(_) => assert_eq!(f.size, 1, "{what}.{}", f.name),
            FieldKind::Struct(l) => assert_eq!(f.size, l.size, "{what}.{}", f.name),
            FieldKind::Array(l, n) => assert_eq!(f.size, l.size * n, "{what}.{}", f.name),
            FieldKind::Union(alts) => {
                for a in alts {
                    assert_eq!(a.offset, 0, "{what}.{}.{}", f.name, a.name);
                    assert_eq!(a.size, f.size, "{what}.{}.{}", f.name, a.name);
                }
            }
            FieldKind::Bytes => {}
        }
        if let FieldKind::Bits(b) = f.kind {
            assert_eq!(b.width, 8 * f.size as u32, "{what}.{}", f.name);
            let mut m = 0u64;
            for bit in b.bits {
                let bm = ((1u64 << bit.width) - 1) << bit.lsb;
                assert!(bit.lsb + bit.width <= b.width, "{}.{} does not fit", b.name, bit.name);
                assert_eq!(m & bm, 0, "{}.{} overlaps", b.name, bit.name);
                m |= bm;
            }
        }
        end = f.offset + f.size;
    }
}

#[test]
fn internal_records_have_no_overlap_and_fit() {
    for l in roce_model::contract::records::RECORDS {
        check_fields(l.name, l.size, l.fields);
        let reserved: usize = l.reserved().iter().map(|r| r.len()).sum();
        let covered: usize = l.fields.iter().map(|f| f.size).sum();
        assert_eq!(reserved + covered, l.size, "{}", l.name);
    }
}

#[test]
fn layouts_have_no_overlap_fit_and_are_aligned() {
    let mut names = std::collections::HashSet::new();
    for l in LAYOUTS {
        assert!(names.insert(l.sv), "duplicate layout {}", l.sv);
        check_fields(l.name, l.size, l.fields);
        assert_eq!(l.size % 8, 0, "{}: size {} not a multiple of 8", l.name, l.size);
        assert_eq!(l.size % layout_align(l), 0, "{}", l.name);
        assert!(l.size.is_power_of_two(), "{}: size {} (ring entries and contexts are powers of two)", l.name, l.size);
        let reserved: usize = l.reserved().iter().map(|r| r.len()).sum();
        let covered: usize = l.fields.iter().map(|f| f.size).sum();
        assert_eq!(reserved + covered, l.size, "{}", l.name);
    }
    // Sizes from the specification.
    assert_eq!((Sge::SIZE, SqWqe::SIZE, RqWqe::SIZE, Cqe::SIZE), (16, 128, 64, 32));
    assert_eq!((QpCtx::SIZE, CqCtx::SIZE, MrCtx::SIZE), (128, 32, 64));
    // Every context fits the staging buffer.
    let staging = (4 * regs::cmd_data::COUNT) as usize;
    for s in [QpCtx::SIZE, CqCtx::SIZE, MrCtx::SIZE] {
        assert!(s <= staging);
    }
}

// ---- byte images from the specification ---------------------------------------------------

/// `img[at..]` = `v` little-endian in `n` bytes.
fn le(img: &mut [u8], at: usize, n: usize, v: u64) {
    for i in 0..n {
        img[at + i] = (v >> (8 * i)) as u8;
    }
}

#[test]
fn cqe_image() {
    let c = Cqe {
        wr_id: 0x1122_3344_5566_7788,
        byte_len: 0xAABB_CCDD,
        imm_or_inv: 0x0102_0304,
        qpn: 0x12_3456,
        opcode: CqeOpcode::RecvImm,
        status: CqeStatus::RemAccessErr,
        flags: CqeFlags::IMM_VALID | CqeFlags::SOLICITED,
        owner: CqeOwner::PHASE,
        src_qp: 0xAB_CDEF,
    };
    let mut want = [0u8; 32];
    le(&mut want, 0, 8, 0x1122_3344_5566_7788);
    le(&mut want, 8, 4, 0xAABB_CCDD);
    le(&mut want, 12, 4, 0x0102_0304);
    le(&mut want, 16, 4, 0x12_3456);
    want[20] = 0x82;
    want[21] = 10; // IBV_WC_REM_ACCESS_ERR
    want[22] = 0b101;
    want[23] = 1;
    le(&mut want, 24, 4, 0xAB_CDEF);
    assert_eq!(c.encode(), want);
}

#[test]
fn sq_wqe_images() {
    let sge = |i: u64| Sge { addr: 0x1000 * i, len: 0x100 + i as u32, lkey: 0x500 + i as u32 };
    let w = SqWqe {
        wr_id: 0xDEAD_BEEF,
        opcode: SqOpcode::AtomicCas,
        flags: SqFlags::SIGNALED | SqFlags::FENCE,
        num_sge: 4,
        imm_or_inv: 0x0A0B_0C0D,
        remote_addr: 0x7F00_0000_1000,
        rkey: 0x1234,
        total_len: 8,
        compare_add: 0x1111_2222_3333_4444,
        swap: 0x5555_6666_7777_8888,
        bf_db: 0x0002_0007,
        data: SqData::Sge([sge(1), sge(2), sge(3), sge(4)]),
    };
    let mut want = [0u8; 128];
    le(&mut want, 48, 4, 0x0002_0007);
    le(&mut want, 0, 8, 0xDEAD_BEEF);
    want[8] = 6;
    want[9] = 0b1001;
    want[10] = 4;
    le(&mut want, 12, 4, 0x0A0B_0C0D);
    le(&mut want, 16, 8, 0x7F00_0000_1000);
    le(&mut want, 24, 4, 0x1234);
    le(&mut want, 28, 4, 8);
    le(&mut want, 32, 8, 0x1111_2222_3333_4444);
    le(&mut want, 40, 8, 0x5555_6666_7777_8888);
    for i in 0..4 {
        let at = 64 + 16 * i;
        let s = sge(i as u64 + 1);
        le(&mut want, at, 8, s.addr);
        le(&mut want, at + 8, 4, s.len.into());
        le(&mut want, at + 12, 4, s.lkey.into());
    }
    assert_eq!(w.encode(), want);

    let mut d = [0u8; 64];
    for (i, b) in d.iter_mut().enumerate() {
        *b = i as u8 ^ 0x5A;
    }
    let w = SqWqe { opcode: SqOpcode::SendImm, total_len: 64, data: SqData::Inline(d), ..SqWqe::default() };
    let mut want = [0u8; 128];
    want[8] = 1;
    want[9] = 0b0100;
    le(&mut want, 28, 4, 64);
    want[64..].copy_from_slice(&d);
    assert_eq!(w.encode(), want);
}

#[test]
fn rq_wqe_image() {
    let w = RqWqe {
        wr_id: 9,
        num_sge: 2,
        sge: [Sge { addr: 1, len: 2, lkey: 3 }, Sge { addr: 4, len: 5, lkey: 6 }, Sge::default()],
    };
    let mut want = [0u8; 64];
    le(&mut want, 0, 8, 9);
    want[8] = 2;
    le(&mut want, 16, 8, 1);
    le(&mut want, 24, 4, 2);
    le(&mut want, 28, 4, 3);
    le(&mut want, 32, 8, 4);
    le(&mut want, 40, 4, 5);
    le(&mut want, 44, 4, 6);
    assert_eq!(w.encode(), want);
    assert_eq!(w.sges().len(), 2);
}

#[test]
fn qp_ctx_image() {
    let q = QpCtx {
        state: QpState::Init,
        qp_type: QpType::Rc,
        path_mtu: PathMtu::Mtu4096,
        encap: Encap::RoceV2Ipv6,
        pd: 0x0102_0304,
        access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ,
        dest_qpn: 0xAB_CDEF,
        sq_psn: 0x12_3456,
        rq_psn: 0x65_4321,
        sq_base: 0x1_0000_1000,
        rq_base: 0x2_0000_2000,
        sq_log_size: 10,
        rq_log_size: 9,
        send_cq: 0x1234,
        recv_cq: 0x2345,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 6,
        min_rnr_timer: 12,
        max_rd_atomic: 16,
        max_dest_rd_atomic: 8,
        dest_mac: [0x02, 0x11, 0x22, 0x33, 0x44, 0x55],
        vlan: VlanTag { vid: 100, pcp: 3, valid: true },
        dscp: 26,
        hop_limit: 64,
        udp_sport: 0xC001,
        dest_ip: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 2],
        sq_pi: 0x1111,
        sq_ci: 0x2222,
        rq_pi: 0x3333,
        rq_ci: 0x4444,
        flow_label: 0xABCDE,
        sq_win_shift: 3,
        sq_win_base: 0x0208,
    };
    let mut want = [0u8; 128];
    want[0] = 1;
    want[1] = 2;
    want[2] = 5;
    want[3] = 1;
    le(&mut want, 4, 4, 0x0102_0304);
    le(&mut want, 8, 4, 6);
    le(&mut want, 12, 4, 0xAB_CDEF);
    le(&mut want, 16, 4, 0x12_3456);
    le(&mut want, 20, 4, 0x65_4321);
    le(&mut want, 24, 8, 0x1_0000_1000);
    le(&mut want, 32, 8, 0x2_0000_2000);
    want[40] = 10;
    want[41] = 9;
    le(&mut want, 42, 2, 0x1234);
    le(&mut want, 44, 2, 0x2345);
    want[46..52].copy_from_slice(&[14, 7, 6, 12, 16, 8]);
    want[52..58].copy_from_slice(&[0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
    le(&mut want, 58, 2, 100 | 1 << 12 | 3 << 13);
    want[60] = 26;
    want[61] = 64;
    le(&mut want, 62, 2, 0xC001);
    want[64..80].copy_from_slice(&q.dest_ip);
    le(&mut want, 80, 2, 0x1111);
    le(&mut want, 82, 2, 0x2222);
    le(&mut want, 84, 2, 0x3333);
    le(&mut want, 86, 2, 0x4444);
    le(&mut want, 88, 4, 0xABCDE);
    want[92] = 3;
    le(&mut want, 94, 2, 0x0208);
    assert_eq!(q.encode(), want);
}

#[test]
fn cq_and_mr_ctx_images() {
    let c = CqCtx {
        base: 0x8000_0000,
        log_size: 12,
        flags: CqFlags::IRQ_ENABLE,
        valid: true,
        pi: 7,
        ci: 5,
        state: CqState::ARMED,
    };
    let mut want = [0u8; 32];
    le(&mut want, 0, 8, 0x8000_0000);
    want[8] = 12;
    want[9] = 1;
    want[10] = 1;
    le(&mut want, 12, 2, 7);
    le(&mut want, 14, 2, 5);
    want[16] = 1;
    assert_eq!(c.encode(), want);
    assert_eq!(c.entries(), 4096);

    let m = MrCtx {
        va: 0x7FFF_0000,
        len: 0x1_0000_0000,
        iova: 0x4000_0000,
        pd: 3,
        key: 0x0000_2A07,
        access: AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC,
        valid: true,
    };
    let mut want = [0u8; 64];
    le(&mut want, 0, 8, 0x7FFF_0000);
    le(&mut want, 8, 8, 0x1_0000_0000);
    le(&mut want, 16, 8, 0x4000_0000);
    le(&mut want, 24, 4, 3);
    le(&mut want, 28, 4, 0x2A07);
    le(&mut want, 32, 4, 9);
    want[36] = 1;
    assert_eq!(m.encode(), want);
    assert_eq!(MrCtx::index_of(m.key), 0x2A);
}

// ---- numbering ----------------------------------------------------------------------------

fn codes(e: &EnumDesc) -> Vec<(&'static str, u8)> {
    e.variants.iter().map(|v| (v.name, v.code)).collect()
}

#[test]
fn ibverbs_numbering() {
    // enum ibv_wc_status (rdma-core libibverbs/verbs.h), 0..=21.
    let wc = [
        "Success",
        "LocLenErr",
        "LocQpOpErr",
        "LocEecOpErr",
        "LocProtErr",
        "WrFlushErr",
        "MwBindErr",
        "BadRespErr",
        "LocAccessErr",
        "RemInvReqErr",
        "RemAccessErr",
        "RemOpErr",
        "RetryExcErr",
        "RnrRetryExcErr",
        "LocRddViolErr",
        "RemInvRdReqErr",
        "RemAbortErr",
        "InvEecnErr",
        "InvEecStateErr",
        "FatalErr",
        "RespTimeoutErr",
        "GeneralErr",
    ];
    let want: Vec<(&str, u8)> = wc.iter().enumerate().map(|(i, n)| (*n, i as u8)).collect();
    assert_eq!(codes(&CqeStatus::DESC), want);
    // enum ibv_qp_state.
    assert_eq!(
        codes(&QpState::DESC),
        [("Reset", 0), ("Init", 1), ("Rtr", 2), ("Rts", 3), ("Sqd", 4), ("Sqe", 5), ("Err", 6)]
    );
    // enum ibv_qp_type: IBV_QPT_RC = 2, UC = 3, UD = 4.
    assert_eq!(codes(&QpType::DESC), [("Rc", 2), ("Uc", 3), ("Ud", 4)]);
    // enum ibv_mtu.
    for (m, bytes) in PathMtu::ALL.iter().zip([256, 512, 1024, 2048, 4096]) {
        assert_eq!(m.bytes(), bytes);
        assert_eq!(128 << m.code(), bytes);
    }
    // IBV_ACCESS_*.
    assert_eq!(AccessFlags::LOCAL_WRITE.bits(), 1);
    assert_eq!(AccessFlags::REMOTE_WRITE.bits(), 2);
    assert_eq!(AccessFlags::REMOTE_READ.bits(), 4);
    assert_eq!(AccessFlags::REMOTE_ATOMIC.bits(), 8);
    // enum ibv_qp_attr_mask.
    let m = |b: QpAttrMask| b.bits();
    assert_eq!(m(QpAttrMask::STATE), 1 << 0);
    assert_eq!(m(QpAttrMask::ACCESS_FLAGS), 1 << 3);
    assert_eq!(m(QpAttrMask::AV), 1 << 7);
    assert_eq!(m(QpAttrMask::PATH_MTU), 1 << 8);
    assert_eq!(m(QpAttrMask::TIMEOUT), 1 << 9);
    assert_eq!(m(QpAttrMask::RETRY_CNT), 1 << 10);
    assert_eq!(m(QpAttrMask::RNR_RETRY), 1 << 11);
    assert_eq!(m(QpAttrMask::RQ_PSN), 1 << 12);
    assert_eq!(m(QpAttrMask::MAX_QP_RD_ATOMIC), 1 << 13);
    assert_eq!(m(QpAttrMask::MIN_RNR_TIMER), 1 << 15);
    assert_eq!(m(QpAttrMask::SQ_PSN), 1 << 16);
    assert_eq!(m(QpAttrMask::MAX_DEST_RD_ATOMIC), 1 << 17);
    assert_eq!(m(QpAttrMask::DEST_QPN), 1 << 20);
    // enum ibv_wc_opcode where it applies: SEND..FETCH_ADD = 0..4, RECV = 1 << 7,
    // RECV_RDMA_WITH_IMM = RECV + 1.
    assert_eq!(
        [CqeOpcode::Send, CqeOpcode::Write, CqeOpcode::Read, CqeOpcode::AtomicCas, CqeOpcode::AtomicFaa]
            .map(CqeOpcode::code),
        [0, 1, 2, 3, 4]
    );
    assert_eq!(CqeOpcode::Recv.code(), 0x80);
    assert_eq!(CqeOpcode::RecvWriteImm.code(), 0x81);
    for op in CqeOpcode::ALL {
        let recv = matches!(op, CqeOpcode::Recv | CqeOpcode::RecvImm | CqeOpcode::RecvWriteImm | CqeOpcode::RecvInv);
        assert_eq!(op.code() & 0x80 != 0, recv, "{op:?}");
    }
    // The engine's own numbering, as specified.
    assert_eq!(
        codes(&SqOpcode::DESC),
        [
            ("Send", 0),
            ("SendImm", 1),
            ("SendInv", 2),
            ("Write", 3),
            ("WriteImm", 4),
            ("Read", 5),
            ("AtomicCas", 6),
            ("AtomicFaa", 7)
        ]
    );
    assert_eq!(codes(&Encap::DESC), [("RoceV2Ipv4", 0), ("RoceV2Ipv6", 1), ("RoceV1", 2)]);
    assert_eq!(
        [SqFlags::SIGNALED, SqFlags::SOLICITED, SqFlags::INLINE, SqFlags::FENCE].map(SqFlags::bits),
        [1, 2, 4, 8]
    );
    assert_eq!([CqeFlags::IMM_VALID, CqeFlags::INV_VALID, CqeFlags::SOLICITED].map(CqeFlags::bits), [1, 2, 4]);
    assert_eq!(CqeOwner::PHASE.bits(), 1);
    assert_eq!(CqFlags::IRQ_ENABLE.bits(), 1);
}

#[test]
fn flag_sets_behave() {
    let f = SqFlags::SIGNALED | SqFlags::FENCE;
    assert!(f.contains(SqFlags::SIGNALED) && !f.contains(SqFlags::INLINE));
    assert_eq!(f.difference(SqFlags::FENCE), SqFlags::SIGNALED);
    assert_eq!(SqFlags::from_bits(0x10), None);
    assert_eq!(SqFlags::from_bits_truncate(0x1F).bits(), 0x0F);
    assert_eq!(format!("{f:?}"), "SqFlags(SIGNALED | FENCE)");
    assert_eq!(VlanTag::from_bits(0x7064), VlanTag { vid: 0x64, pcp: 3, valid: true });
    assert_eq!(VlanTag { vid: 0x64, pcp: 3, valid: true }.bits(), 0x7064);
}
