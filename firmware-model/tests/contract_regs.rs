//! The BAR0 register map of the host contract: no overlaps, alignment, fields that fit,
//! reset values, the offsets the specification fixes, the field API, and the limits the
//! doorbell and command fields put on CAPS.

use std::collections::HashSet;

use roce_model::contract::{regs, Access, CmdErrorCode, CmdOpcode, ContractError, CqCtx, Field, MrCtx, QpCtx};

#[test]
fn registers_are_aligned_disjoint_and_inside_bar0() {
    let mut names = HashSet::new();
    let mut end = 0;
    for r in regs::ALL {
        assert!(names.insert(r.name), "duplicate register {}", r.name);
        assert_eq!(r.offset % 4, 0, "{} at {:#x} not 4-byte aligned", r.name, r.offset);
        assert!(r.count >= 1, "{}", r.name);
        assert!(r.offset >= end, "{} at {:#x} overlaps the previous register or is out of order", r.name, r.offset);
        assert!(r.end() <= regs::BAR0_BYTES, "{} outside BAR0", r.name);
        end = r.end();
        let sections: Vec<_> = regs::SECTIONS.iter().filter(|s| r.offset >= s.base && r.end() <= s.end).collect();
        assert_eq!(sections.len(), 1, "{} must lie in exactly one section", r.name);
        assert_eq!(regs::at_offset(r.offset).map(|x| x.name), Some(r.name));
        assert_eq!(regs::at_offset(r.end() - 4).map(|x| x.name), Some(r.name));
        assert_eq!(regs::by_name(r.name).map(|x| x.offset), Some(r.offset));
    }
    let mut end = 0;
    for s in regs::SECTIONS {
        assert!(s.base >= end && s.base < s.end && s.end <= regs::BAR0_BYTES, "section {}", s.name);
        assert_eq!(s.base % 16, 0, "section {}", s.name);
        end = s.end;
    }
    assert_eq!(regs::at_offset(0x0044), None);
    assert_eq!(regs::at_offset(0x0300), None);
}

#[test]
fn fields_fit_do_not_overlap_and_reset_values_fit() {
    for r in regs::ALL {
        assert!(!r.fields.is_empty(), "{} has no fields", r.name);
        let mut names = HashSet::new();
        let mut mask = 0u32;
        let mut reset = 0u32;
        for f in r.fields {
            assert!(names.insert(f.name), "{}.{} duplicate", r.name, f.name);
            assert!(f.field.width >= 1 && f.field.lsb + f.field.width <= 32, "{}.{}", r.name, f.name);
            assert_eq!(f.field.name, format!("{}.{}", r.name, f.name));
            assert_eq!(mask & f.field.mask(), 0, "{}.{} overlaps another field", r.name, f.name);
            mask |= f.field.mask();
            assert!(f.reset <= f.field.max(), "{}.{} reset {:#x} does not fit", r.name, f.name, f.reset);
            reset |= f.reset << f.field.lsb;
            // A field's access may differ from its register's only as a self-clearing bit
            // in a RW register.
            assert!(
                f.access == r.access || (r.access == Access::Rw && f.access == Access::RwSc),
                "{}.{}: {:?} in a {:?} register",
                r.name,
                f.name,
                f.access,
                r.access
            );
            if f.access == Access::RwSc {
                assert_eq!(f.field.width, 1, "{}.{}", r.name, f.name);
            }
        }
        assert!(r.fields.windows(2).all(|w| w[0].field.lsb < w[1].field.lsb), "{}: fields LSB first", r.name);
        assert_eq!(r.reset, reset, "{}: reset is the fields' resets in place", r.name);
        assert_eq!(r.reset & !mask, 0, "{}: reset sets reserved bits", r.name);
        assert_eq!(r.defined_mask(), mask);
        if matches!(r.access, Access::Wo) {
            assert_eq!(r.reset, 0, "{}: write-only registers read 0", r.name);
        }
    }
}

#[test]
fn offsets_and_resets_from_the_specification() {
    let want: &[(&str, u32, Access)] = &[
        ("ID", 0x0000, Access::Ro),
        ("VERSION", 0x0004, Access::Ro),
        ("CAPS", 0x0008, Access::Ro),
        ("NEXT", 0x000C, Access::Ro),
        ("CTRL", 0x0010, Access::Rw),
        ("STATUS", 0x0014, Access::Ro),
        ("IRQ_STATUS", 0x0018, Access::W1c),
        ("IRQ_MASK", 0x001C, Access::Rw),
        ("MAC_LO", 0x0020, Access::Rw),
        ("MAC_HI", 0x0024, Access::Rw),
        ("IPV4", 0x0028, Access::Rw),
        ("GID", 0x0030, Access::Rw),
        ("VLAN", 0x0040, Access::Rw),
        ("TICK_CYCLES", 0x0050, Access::Rw),
        ("CMD", 0x0100, Access::Wo),
        ("CMD_STATUS", 0x0104, Access::Ro),
        ("CMD_DATA", 0x0140, Access::Rw),
        ("SQ_DB", 0x0200, Access::Wo),
        ("RQ_DB", 0x0204, Access::Wo),
        ("CQ_DB", 0x0208, Access::Wo),
        ("RX_FRAMES_LO", 0x0400, Access::Ro),
    ];
    for &(name, offset, access) in want {
        let r = regs::by_name(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!((r.offset, r.access), (offset, access), "{name}");
    }
    assert_eq!(regs::ID, 0x0000);
    assert_eq!(regs::CTRL, 0x0010);
    assert_eq!(regs::CMD_DATA, 0x0140);
    assert_eq!(regs::id::RESET, u32::from_be_bytes(*b"ROCE"));
    assert_eq!(regs::id::RESET, regs::ID_VALUE);
    assert_eq!(regs::version::RESET, regs::VERSION_MAJOR << 16 | regs::VERSION_MINOR);
    assert_eq!(regs::next::RESET, 0, "no further register block");
    assert_eq!(regs::tick_cycles::RESET, 1024, "4.096 us at 250 MHz");
    assert_eq!(regs::us_cycles::RESET, 250);
    assert_eq!((regs::gid::COUNT, regs::gid::at(3)), (4, 0x003C));
    assert_eq!(regs::cmd_data::at(regs::cmd_data::COUNT - 1), 0x01BC);
    assert_eq!(regs::irq_mask::RESET, regs::irq_status::FIELDS.iter().fold(0, |m, f| m | f.field.mask()));
    // IRQ_MASK mirrors IRQ_STATUS bit for bit.
    let names = |r: &regs::RegDesc| r.fields.iter().map(|f| (f.name, f.field)).collect::<Vec<_>>();
    let strip = |v: Vec<(&'static str, Field)>| v.into_iter().map(|(n, f)| (n, f.lsb, f.width)).collect::<Vec<_>>();
    assert_eq!(strip(names(&regs::irq_status::DESC)), strip(names(&regs::irq_mask::DESC)));
    // The brief's bit assignments.
    let bit = |f: Field| (f.lsb, f.width);
    assert_eq!(bit(regs::ctrl::ENABLE), (0, 1));
    assert_eq!(bit(regs::ctrl::SOFT_RESET), (1, 1));
    assert_eq!(bit(regs::caps::LOG_MAX_QP), (0, 5));
    assert_eq!(bit(regs::caps::LOG_MAX_CQ), (8, 5));
    assert_eq!(bit(regs::caps::LOG_MAX_MR), (16, 5));
    assert_eq!(bit(regs::caps::MAX_MTU), (24, 3));
    assert_eq!(bit(regs::vlan::VID), (0, 12));
    assert_eq!(bit(regs::vlan::PCP), (13, 3));
    assert_eq!(bit(regs::vlan::ENABLE), (16, 1));
    assert_eq!(bit(regs::cmd::OPCODE), (0, 8));
    assert_eq!(bit(regs::cmd::INDEX), (8, 24));
    assert_eq!(bit(regs::cmd_status::BUSY), (0, 1));
    assert_eq!(bit(regs::cmd_status::ERROR), (8, 8));
    assert_eq!(bit(regs::sq_db::PI), (0, 16));
    assert_eq!(bit(regs::sq_db::QP), (16, 16));
    assert_eq!(bit(regs::rq_db::PI), (0, 16));
    assert_eq!(bit(regs::rq_db::QP), (16, 16));
    assert_eq!(bit(regs::cq_db::CI), (0, 16));
    assert_eq!(bit(regs::cq_db::CQ), (16, 14));
    assert_eq!(bit(regs::cq_db::ARM), (31, 1));
    assert_eq!(
        [
            CmdOpcode::QpWrite,
            CmdOpcode::QpRead,
            CmdOpcode::CqWrite,
            CmdOpcode::CqRead,
            CmdOpcode::MrWrite,
            CmdOpcode::MrRead,
            CmdOpcode::MrInvalidate,
            CmdOpcode::QpModify
        ]
        .map(CmdOpcode::code),
        [1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(
        [
            CmdErrorCode::Ok,
            CmdErrorCode::BadOpcode,
            CmdErrorCode::BadIndex,
            CmdErrorCode::BadState,
            CmdErrorCode::BadAttr
        ]
        .map(CmdErrorCode::code),
        [0, 1, 2, 3, 4]
    );
}

#[test]
fn counters_are_lo_hi_pairs() {
    let counters: Vec<_> = regs::counters().collect();
    assert_eq!(counters.len(), 26);
    // the counter block (0x400..0x500) holds at most 32 LO/HI pairs
    assert!(counters.iter().all(|(_, lo)| (0x400..0x500).contains(lo)));
    for (name, lo) in &counters {
        assert_eq!(lo % 8, 0, "{name}: 8-byte aligned pair");
        let hi = regs::by_name(&format!("{name}_HI")).unwrap_or_else(|| panic!("{name}_HI"));
        assert_eq!(hi.offset, lo + 4, "{name}");
        assert_eq!(hi.access, Access::Ro);
    }
    let counted: usize =
        regs::ALL.iter().filter(|r| r.offset >= 0x400 && r.offset < 0x500).map(|r| r.count as usize).sum();
    assert_eq!(counted, 2 * counters.len(), "only LO/HI pairs in the counter block");
    for name in [
        "RX_FRAMES",
        "RX_BYTES",
        "RX_ICRC_ERRORS",
        "RX_MALFORMED",
        "RX_UNKNOWN_QP",
        "RX_DROPPED",
        "TX_FRAMES",
        "TX_BYTES",
        "RETRANSMITS",
        "TIMEOUTS",
        "NAK_SEQ_SENT",
        "NAK_RNR_SENT",
        "NAK_INV_REQ_SENT",
        "NAK_REM_ACC_SENT",
        "NAKS_RCVD",
        "CNP_SENT",
        "CNP_RCVD",
        "ECN_MARKED_RCVD",
        "PFC_PAUSE_RCVD",
        "RNR_RETRIES",
        "RX_NOT_ROCE",
        "NAK_REM_OP_SENT",
        "DUPLICATES",
        "ACKS_SENT",
        "CQES",
        "DMA_ERRORS",
    ] {
        assert!(counters.iter().any(|(n, _)| *n == name), "{name}");
    }
}

#[test]
fn every_counter_register_shows_its_own_engine_counter() {
    // The engine model's register file and the Verilated engine's harness read counters
    // through counter_field: every counter of the map is one field of Counters, no field twice.
    use roce_model::engine::{regs::counter_field, Counters};
    let mut c = Counters::default();
    let mut fields = HashSet::new();
    for (name, lo) in regs::counters() {
        let f = counter_field(&mut c, lo).unwrap_or_else(|| panic!("{name} shows no Counters field")) as *mut u64;
        assert!(fields.insert(f as usize), "{name} shows a field another counter shows");
        let hi = counter_field(&mut c, lo + 4).map(|x| x as *mut u64);
        assert_eq!(hi, Some(f), "{name}_HI");
    }
    assert_eq!(counter_field(&mut c, 0x0400 + 8 * fields.len() as u32), None, "past the last counter");
}

#[test]
fn widths_agree_across_registers_and_contexts() {
    let caps = regs::caps::RESET;
    let get = |f: Field| f.get(caps);
    // Indices carried by doorbells and commands must hold every QP/CQ/MR of the build.
    assert!(get(regs::caps::LOG_MAX_QP) <= regs::sq_db::QP.width);
    assert!(get(regs::caps::LOG_MAX_QP) <= regs::rq_db::QP.width);
    assert!(get(regs::caps::LOG_MAX_CQ) <= regs::cq_db::CQ.width);
    assert!(get(regs::caps::LOG_MAX_MR) <= regs::cmd::INDEX.width);
    assert!(get(regs::caps::LOG_MAX_QP) <= regs::cmd::INDEX.width);
    assert!(get(regs::caps::MAX_MTU) >= 1 && get(regs::caps::MAX_MTU) <= 5);
    let field = |l: &roce_model::contract::LayoutDesc, n: &str| l.field(n).unwrap_or_else(|| panic!("{n}")).bits;
    assert_eq!(field(&QpCtx::LAYOUT, "send_cq"), regs::cq_db::CQ.width);
    assert_eq!(field(&QpCtx::LAYOUT, "recv_cq"), regs::cq_db::CQ.width);
    assert_eq!(regs::cq_err_info::CQ.width, regs::cq_db::CQ.width);
    assert_eq!(field(&QpCtx::LAYOUT, "sq_pi"), regs::sq_db::PI.width);
    assert_eq!(field(&QpCtx::LAYOUT, "rq_pi"), regs::rq_db::PI.width);
    assert_eq!(field(&CqCtx::LAYOUT, "ci"), regs::cq_db::CI.width);
    assert_eq!(field(&QpCtx::LAYOUT, "dest_qpn"), regs::qp_err_info::QPN.width);
    assert_eq!(field(&QpCtx::LAYOUT, "dest_qpn"), 24);
    // Ring log sizes stop at 15 so a 16-bit free-running index tells full from empty.
    assert_eq!(field(&QpCtx::LAYOUT, "sq_log_size"), 4);
    assert_eq!(field(&CqCtx::LAYOUT, "log_size"), 4);
    // The staging buffer holds the largest context.
    let staging = 4 * regs::cmd_data::COUNT as usize;
    assert_eq!(staging, [QpCtx::SIZE, CqCtx::SIZE, MrCtx::SIZE].into_iter().max().unwrap());
}

#[test]
fn field_api() {
    use regs::ctrl;
    assert_eq!(ctrl::ENABLE.set(0, 1), Ok(1));
    assert_eq!(ctrl::ECN_ENABLE.val(1), Ok(1 << 8));
    assert_eq!(ctrl::ENABLE.set(0, 2), Err(ContractError::Overflow { field: "CTRL.ENABLE", value: 2, width: 1 }));
    let v =
        regs::cq_db::CI.val(0xFFFF).unwrap() | regs::cq_db::CQ.val(0x3FFF).unwrap() | regs::cq_db::ARM.val(1).unwrap();
    assert_eq!(v, 0xBFFF_FFFF);
    assert_eq!(regs::cq_db::CQ.get(v), 0x3FFF);
    assert!(regs::cq_db::ARM.is_set(v) && !regs::cq_db::SOLICITED.is_set(v));
    assert_eq!(regs::cq_db::CQ.set(v, 0), Ok(0x8000_FFFF));
    assert!(regs::cq_db::CQ.set(v, 0x4000).is_err());
    let id = regs::id::ID;
    assert_eq!((id.max(), id.mask(), id.msb()), (u32::MAX, u32::MAX, 31));
    assert_eq!(id.set(0, u32::MAX), Ok(u32::MAX));
    assert_eq!(regs::version::MAJOR.get(0x0003_0002), 3);
}

#[test]
#[should_panic(expected = "does not fit in 32 bits")]
fn field_new_rejects_fields_past_bit_31() {
    let _ = Field::new("X.Y", 30, 4);
}
