//! `docs/register-map.md`, the hardware and driver teams' reference, generated from the
//! same tables as the SystemVerilog packages. The prose (protocols, conventions) lives
//! here; every number comes from the tables.

use std::fmt::Write;

use super::regs::{self, SECTIONS};
use super::sv::{bit_names, clean, enum_code_name};
use super::{
    Access, BitsDesc, CmdErrorCode, CmdOpcode, CqCtx, Cqe, EnumDesc, FieldKind, LayoutDesc, LayoutField, MrCtx,
    QpAttrMask, QpCtx, RegDesc, RqWqe, SqWqe, LAYOUTS, QP_TRANSITIONS,
};

/// Markdown table cell: no `|`, no line breaks.
fn cell(s: &str) -> String {
    clean(s).replace('|', "\\|")
}

fn hex32(v: u32) -> String {
    format!("0x{:04X}_{:04X}", v >> 16, v & 0xffff)
}

fn bits_label(msb: u32, lsb: u32) -> String {
    if msb == lsb {
        format!("{lsb}")
    } else {
        format!("{msb}:{lsb}")
    }
}

fn reg_label(r: &RegDesc) -> String {
    if r.count > 1 {
        format!("{}[0..{}]", r.name, r.count - 1)
    } else {
        r.name.to_string()
    }
}

fn offset_label(r: &RegDesc) -> String {
    if r.count > 1 {
        format!("0x{:04X}–0x{:04X}", r.offset, r.end() - 4)
    } else {
        format!("0x{:04X}", r.offset)
    }
}

/// The GitHub anchor of a heading: lower case, spaces to `-`, other punctuation but `-` and
/// `_` dropped.
fn anchor(name: &str) -> String {
    name.to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn mask_names(m: QpAttrMask) -> String {
    let names: Vec<&str> =
        QpAttrMask::DESC.bits.iter().filter(|b| m.bits() & (1 << b.lsb) != 0).map(|b| b.name).collect();
    if names.is_empty() {
        "—".to_string()
    } else {
        names.join(", ")
    }
}

fn enum_table(o: &mut String, e: &EnumDesc) {
    let _ = writeln!(o, "#### {}\n\n{}\n", e.name, cell(e.desc));
    let _ = writeln!(o, "| Code | Name | SystemVerilog | Description |\n|---|---|---|---|");
    for v in e.variants {
        let _ = writeln!(o, "| 0x{:02X} | `{}` | `{}` | {} |", v.code, v.name, enum_code_name(e, v.name), cell(v.desc));
    }
    let _ = writeln!(o);
}

fn bits_table(o: &mut String, b: &BitsDesc) {
    let _ =
        writeln!(o, "#### {}\n\n{} ({} bits; bits not listed are reserved, zero.)\n", b.name, cell(b.desc), b.width);
    let _ = writeln!(o, "| Bits | Name | SystemVerilog | Description |\n|---|---|---|---|");
    for bit in b.bits {
        let sv: Vec<String> = bit_names(b, bit.name, bit.width).into_iter().map(|n| format!("`{n}`")).collect();
        let _ = writeln!(
            o,
            "| {} | `{}` | {} | {} |",
            bits_label(bit.lsb + bit.width - 1, bit.lsb),
            bit.name,
            sv.join(", "),
            cell(bit.desc)
        );
    }
    let _ = writeln!(o);
}

fn type_label(f: &LayoutField) -> String {
    let base = match f.kind {
        FieldKind::Uint => format!("u{}", 8 * f.size),
        FieldKind::Bool => "bool (0/1)".to_string(),
        FieldKind::Enum(e) => format!("u8 [{}](#{})", e.name, anchor(e.name)),
        FieldKind::Bits(b) => format!("u{} [{}](#{})", 8 * f.size, b.name, anchor(b.name)),
        FieldKind::Bytes => format!("[u8; {}]", f.size),
        FieldKind::Struct(l) => format!("[{}](#{})", l.name, anchor(l.name)),
        FieldKind::Array(l, n) => format!("[{}](#{}) × {n}", l.name, anchor(l.name)),
        FieldKind::Union(_) => "union".to_string(),
    };
    if f.bits < 8 * f.size as u32 && !matches!(f.kind, FieldKind::Bool) {
        format!("{base}, bits {}:0 (rest reserved)", f.bits - 1)
    } else {
        base
    }
}

fn layout_table(o: &mut String, l: &LayoutDesc) {
    let _ = writeln!(o, "### {}\n\n{} bytes, `roce_desc_pkg::{}_t`. {}\n", l.name, l.size, l.sv, cell(l.desc));
    let _ = writeln!(o, "| Byte offset | Size | Field | Type | Description |\n|---|---|---|---|---|");
    let mut at = 0;
    let rsvd = |o: &mut String, from: usize, to: usize| {
        if to > from {
            let _ = writeln!(o, "| {from} | {} | *reserved* | — | Zero. |", to - from);
        }
    };
    for f in l.fields {
        rsvd(o, at, f.offset);
        let _ = writeln!(o, "| {} | {} | `{}` | {} | {} |", f.offset, f.size, f.name, type_label(f), cell(f.desc));
        if let FieldKind::Union(alts) = f.kind {
            for a in alts {
                let _ = writeln!(
                    o,
                    "| {} | {} | `{}.{}` | {} | {} |",
                    f.offset + a.offset,
                    a.size,
                    f.name,
                    a.name,
                    type_label(a),
                    cell(a.desc)
                );
            }
        }
        at = f.offset + f.size;
    }
    rsvd(o, at, l.size);
    let _ = writeln!(o);
}

const INTRO: &str = "\
This is the contract between the RoCEv2 offload engine (`hdl/rtl/`), its model (`firmware-model`) \
and the driver: the BAR0 register map, the descriptor layouts in host memory and in the command \
staging buffer, and the protocols that use them. It is generated, like \
`hdl/rtl/gen/roce_regs_pkg.sv` and `hdl/rtl/gen/roce_desc_pkg.sv`, from the Rust tables in \
`firmware-model/src/contract/` (`roce_model::contract`), so the three cannot disagree.";

const CONVENTIONS: &str = "\
- **BAR0** is 64 KiB. Registers are 32 bits wide at 4-byte aligned offsets, little-endian, and \
  are accessed 32 bits at a time (all byte enables set); narrower or 64-bit accesses are \
  undefined. Offsets no register covers are reserved: they read 0 and writes are ignored.
- **Reserved bits** (bits no field covers) read 0; software writes them as 0.
- **Reset values** apply after power-up. A soft reset (`CTRL.SOFT_RESET`) resets only the state \
  listed under `CTRL`.
- **Indices.** QP index = QP number (QPN) on the wire; QP indices 0 and 1 are reserved (QP0/QP1 \
  in InfiniBand) and never used for RC. CQ index 0 .. 2^`CAPS.LOG_MAX_CQ` − 1. MR index = \
  `key >> 8`: the low 8 bits of a key are a tag the driver changes when it re-registers the \
  index, and the engine compares the whole key, so stale keys fail.
- **Host memory** (rings, buffers) is addressed by DMA address. Rings are DMA-contiguous and \
  4 KiB aligned. All multi-byte descriptor fields are little-endian.
- **ibverbs numbering.** Where libibverbs defines a code, the contract uses its value: \
  `enum ibv_wc_status` (CqeStatus), `ibv_qp_state` (QpState), `ibv_qp_type` (QpType), \
  `ibv_mtu` (PathMtu), `IBV_ACCESS_*` (AccessFlags), `enum ibv_qp_attr_mask` bit positions \
  (QpAttrMask), and `ibv_wc_opcode` for CqeOpcode 0x00–0x04, 0x80, 0x81.
- **SystemVerilog names.** Register `R`: `roce_regs_pkg::R_ADDR` (and `R_COUNT` for an array), \
  `R_RESET`; field `F`: `R_F_LSB`, `R_F_W`. Descriptor `L` (e.g. `sq_wqe`): \
  `roce_desc_pkg::sq_wqe_t`, `SQ_WQE_BYTES`, and per field `SQ_WQE_F_OFF` (byte offset), \
  `SQ_WQE_F_W` (bits used), `SQ_WQE_F_COUNT` (arrays). Enum codes and flag bits are listed in \
  their tables below.";

const COMMAND_PROTOCOL: &str = "\
The QP, CQ and MR context tables live inside the engine and are reached only through commands. \
One command runs at a time:

1. Wait until `CMD_STATUS.BUSY` = 0.
2. For a write command, write the context's byte image (its descriptor layout below) into \
   `CMD_DATA`: word *i* holds bytes 4*i*..4*i*+3, little-endian. Only the first `SIZE/4` words are \
   used. For `QP_MODIFY`, also write the attribute mask to `CMD_ARG`.
3. Write `CMD` = `OPCODE | INDEX << 8`. `CMD_STATUS.BUSY` reads 1 from then on.
4. Poll `CMD_STATUS` until `BUSY` = 0 (or wait for `IRQ_STATUS.CMD_DONE`), then check `ERROR`.
5. For a read command, read the context from `CMD_DATA` (the words after the context's size \
   read 0).

A `CMD` write while `BUSY` = 1 is ignored; `CMD_DATA` and `CMD_ARG` must not be written while \
`BUSY` = 1. A failed command changes nothing. The engine does not check reserved bytes or bits of \
contexts beyond what `BAD_ATTR` lists; software writes them as zero (the Rust decoder rejects \
them). Fields marked as engine state are read-only: every write command ignores what \
`CMD_DATA` holds there, and `QP_WRITE` / `CQ_WRITE` zero them. `CMD_DATA` keeps what software \
wrote until a read command replaces it.";

const TRANSITIONS_TEXT: &str = "\
`QP_WRITE` is accepted only while the QP is in Reset, and the written `state` must be Reset or \
Init; it takes every field. After that, `QP_MODIFY` moves the QP: `CMD_ARG` holds a QpAttrMask \
that must include `STATE` (the target state is `QpCtx.state` in `CMD_DATA`), every attribute \
the transition requires, and otherwise only attributes it accepts (`BAD_ATTR`); fields not in \
the mask keep their value. A transition not in the table fails with `BAD_STATE`. The table is \
`roce_model::contract::QP_TRANSITIONS` (the IB specification's RC table as libibverbs applies \
it, without the attributes the engine has no state for).";

const QUEUE_PROTOCOL: &str = "\
### Rings and indices

Each QP has a send queue (SQ) of 2^`sq_log_size` [SqWqe](#sqwqe) entries (128 bytes) at \
`sq_base` and a receive queue (RQ) of 2^`rq_log_size` [RqWqe](#rqwqe) entries (64 bytes) at \
`rq_base`; each CQ is a ring of 2^`log_size` [Cqe](#cqe) entries (32 bytes) at `base`. Log sizes \
are 0..15, bases 4 KiB aligned.

Producer and consumer indices are **free-running 16-bit counters**: they count entries, not \
slots, and wrap at 2^16. The slot of index *i* is *i* mod 2^log_size (`i & (size - 1)`), and the \
entries outstanding are (PI − CI) mod 2^16, at most the ring size. Since a ring has at most \
2^15 entries, a full ring and an empty ring are always distinguishable.

### Posting work requests (SQ and RQ)

1. Check for space: (PI − CI) mod 2^16 < size, where CI counts the entries software has retired.
2. Write the WQE into slot PI mod size; PI += 1 (mod 2^16). Several WQEs may share one doorbell.
3. Issue a write memory barrier: the WQEs must be visible in host memory before the doorbell.
4. Write `SQ_DB` (or `RQ_DB`) = `PI | QP << 16`.

The engine reads WQEs from its own consumer index up to PI and never beyond. A doorbell whose PI \
is more than the ring size ahead of the engine's consumer index moves the QP to Err \
(`QP_ERR_INFO.CAUSE` = LocQpOpErr). Doorbells for an out-of-range QP or a QP in Reset are \
dropped. PIs rung in Init or Rtr are kept: SQ WQEs start only in Rts (started ones finish in \
Sqd); RQ WQEs are consumed in Rtr, Rts and Sqd. In Err, every posted WQE completes with \
WrFlushErr.

An `SQ_DB` whose PI is behind the QP's last one (by less than 2^15) is stale and ignored: with \
inline doorbells an `SQ_DB` and a BlueFlame write of the same QP may reach the requester in \
either order.

### Inline doorbells (BlueFlame window)

When `CAPS.BF` = 1, BAR2 is a write-only window of 2^`CAPS.LOG_MAX_QP` slots of 128 bytes; \
slot *q* at offset 128 *q* belongs to QP *q*. Instead of step 4 above, software may post **one** \
WQE by writing its whole 128-byte image, with `bf_db` = `PI | QP << 16` (PI = its SQ index + 1), \
into the QP's slot: two 64-byte stores in order (write-combining, each 64-byte half one PCIe \
write; a store fence after each). Software still writes the WQE into the ring first (step 2) \
and fences (step 3): the window copy only saves the engine the read.

The write is the QP's doorbell (`SQ_DB` = `bf_db`, with the rules above). The engine also takes \
the WQE from it, without reading the ring, when it is exactly the next one to fetch: the QP is \
in Rts, the write advances PI by one, every WQE posted before it was fetched and has arrived, \
the send window has room as of the requester's last visit, the WQE is fewer than 16 ahead of \
the QP's send index, and the WQE's prefetch store entry \
is not being read. Otherwise the copy is discarded and the WQE is read from the ring as after \
`SQ_DB`. The two copies must be identical (the engine may use either). Writes to a slot are \
serialized by software (one poster per QP at a time, as for the ring).

Completion and retirement: the WQEs of one queue complete in order. Every RQ WQE produces one \
CQE. An SQ WQE produces a CQE if it is `SIGNALED` or fails; a CQE for SQ WQE *n* retires it and \
every unsignaled WQE before it, so software can advance its SQ CI to *n* + 1. (`QP_READ` also \
reports the engine's indices.)

### Completions: phase bit

The engine writes the CQE for its producer index *pi* into slot *pi* mod size with \
`owner.PHASE` = 1 − ((*pi* >> log_size) & 1): 1 on the first pass over the ring after `CQ_WRITE`, \
0 on the second, and so on. Each CQE is written as one 32-byte aligned write. Software zero-fills \
the ring before `CQ_WRITE` and keeps its own free-running consumer index *ci*:

1. Read `owner` of slot *ci* mod size. The entry is new if `owner.PHASE` = \
   1 − ((*ci* >> log_size) & 1); otherwise the CQ is empty.
2. Issue a read memory barrier, then read the rest of the CQE; *ci* += 1.
3. Return entries by writing `CQ_DB` = `CI | CQ << 16` (as often as convenient, and at the \
   latest when the ring is full).

The engine never writes more than the ring size beyond the last `CQ_DB` CI. If a completion is \
due with the ring full, the CQE is dropped, `CqState.OVERRUN` is set, and \
`IRQ_STATUS.CQ_ERROR` is raised with `CQ_ERR_INFO` = {CQ, OVERRUN}; the CQ takes no more entries \
until it is written again. Size each CQ for the sum of the queues that complete into it.

### Arming and events

`CQ_DB` with `ARM` = 1 requests one event (`ibv_req_notify_cq`). With `SOLICITED` = 0 the arm \
fires as soon as the CQ holds an entry beyond the doorbell's CI: at once if there already is one, \
otherwise at the next CQE. With `SOLICITED` = 1 it fires at the next CQE written after the \
doorbell that has `CqeFlags.SOLICITED` or an error status. Firing disarms the CQ and, if \
`CqFlags.IRQ_ENABLE`, sets `IRQ_STATUS.CQ_EVENT`. Because the engine compares against the CI \
carried by the same doorbell, the loop *poll until empty → write `CQ_DB` with `ARM` and the \
final CI → sleep* loses no completion. `ARM` = 0 does not disarm.";

const IRQ_TEXT: &str = "\
The interrupt line (one MSI/MSI-X vector, or INTx) is the OR of `IRQ_STATUS & ~IRQ_MASK`; an MSI \
is sent when it goes from 0 to 1. A handler reads `IRQ_STATUS`, writes the value read back to \
`IRQ_STATUS` (W1C) and then handles the causes, so a cause raised meanwhile interrupts again. On \
`CQ_EVENT` the driver checks the CQs it armed (their rings are in host memory, so this costs no \
MMIO). On `QP_ERROR` and `CQ_ERROR`, `QP_ERR_INFO` / `CQ_ERR_INFO` name the first failing QP or CQ \
since the bit was cleared; if more failed, `QP_READ` / `CQ_READ` find them. `FATAL` needs a soft \
reset.";

const BRINGUP_TEXT: &str = "\
1. Wait for `STATUS.READY`. Check `ID` = 0x524F4345 and `VERSION.MAJOR`; read `CAPS`.
2. Write `MAC_LO`/`MAC_HI`, `IPV4` and/or `GID`, `VLAN`, `TICK_CYCLES` and `US_CYCLES` for the \
   engine clock, and the congestion registers; set `IRQ_MASK`.
3. Per CQ: zero-fill the ring, `CQ_WRITE` a [CqCtx](#cqctx) with `valid` = 1.
4. Per MR: `MR_WRITE` an [MrCtx](#mrctx) at index `key >> 8`.
5. Per QP: `QP_WRITE` a [QpCtx](#qpctx) in Init; post receive WQEs; `QP_MODIFY` to Rtr, then Rts \
   (with the masks in the transition table).
6. Set `CTRL.ENABLE` (and the congestion enables).";

const DESC_CONVENTION: &str = "\
Descriptors are fixed-size byte images: work queue entries and CQEs in host memory rings, \
contexts in `CMD_DATA`. Multi-byte integers are little-endian; byte arrays (MAC and IP \
addresses, inline data) are in memory order, i.e. network order for addresses. Bytes marked \
reserved, and bits above a field's documented width, are zero.

**SystemVerilog bit convention.** An N-byte descriptor is an 8N-bit vector in which byte *b* is \
bits [8*b*+7 : 8*b*]: the AXI / AXI-Stream byte-lane order, so N bytes taken from lane 0 of \
`tdata` cast directly to the packed struct (`roce_desc_pkg::cqe_t'(tdata[255:0])`). Struct \
members are declared from the highest offset down, and since integers are little-endian each \
integer member reads as its value (`cqe.byte_len`). Byte array member byte *k* is bits \
[8*k*+7 : 8*k*]: the first MAC octet on the wire is `dest_mac[7:0]`. Reserved bytes are members \
`rsvd_<offset>`; reserved upper bits of a field are a member `<field>_rsvd`. Nested descriptors \
are struct members (`rq_wqe.sge_0.addr`); the SQ WQE's data area is a 512-bit member `data` that \
casts to `sq_wqe_data_sge_t` (four SGEs) when `INLINE` is clear.";

/// `docs/register-map.md`.
pub fn register_map() -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# RoCE engine host interface: register map and descriptor layouts\n\n\
         <!-- GENERATED by `cargo run -p roce-model --bin roce-gen-hdl` from \
         firmware-model/src/contract/. Do not edit: change the contract and regenerate (a test \
         checks this file is current). -->\n\n\
         Contract version {}.{} (`VERSION` register).\n\n{INTRO}\n",
        regs::VERSION_MAJOR,
        regs::VERSION_MINOR
    );
    let _ = writeln!(
        o,
        "Contents: [Conventions](#conventions) · [Register summary](#register-summary) · \
         [Registers](#registers) · [Command protocol](#command-protocol) · \
         [Queue protocol](#queue-protocol) · [Interrupts](#interrupts) · [Bring-up](#bring-up) · \
         [Descriptor layouts](#descriptor-layouts) · [Enumerations](#enumerations) · \
         [Flags and bit fields](#flags-and-bit-fields)\n"
    );

    let _ = writeln!(o, "## Conventions\n\n{CONVENTIONS}\n");
    let _ = writeln!(o, "Access types:\n\n| Access | Meaning |\n|---|---|");
    for a in Access::ALL {
        let _ = writeln!(o, "| {} | {} |", a.label(), cell(a.meaning()));
    }
    let _ = writeln!(o);

    let _ = writeln!(o, "## Register summary\n");
    let _ = writeln!(o, "| Offset | Register | Access | Reset | Description |\n|---|---|---|---|---|");
    for r in regs::ALL {
        let _ = writeln!(
            o,
            "| {} | [`{}`](#{}) | {} | {} | {} |",
            offset_label(r),
            reg_label(r),
            anchor(r.name),
            r.access.label(),
            hex32(r.reset),
            cell(r.desc)
        );
    }
    let _ = writeln!(o);

    let _ = writeln!(o, "## Registers\n");
    for s in SECTIONS {
        let _ = writeln!(o, "### {} (0x{:04X}–0x{:04X})\n\n{}\n", s.name, s.base, s.end - 1, cell(s.desc));
        for r in regs::ALL.iter().filter(|r| r.offset >= s.base && r.offset < s.end) {
            let _ = writeln!(o, "#### {}\n", r.name);
            let _ = writeln!(
                o,
                "Offset {}, {}, reset {}. {}\n",
                offset_label(r),
                r.access.label(),
                hex32(r.reset),
                cell(r.desc)
            );
            let _ = writeln!(o, "| Bits | Field | Access | Reset | Description |\n|---|---|---|---|---|");
            for f in r.fields {
                let _ = writeln!(
                    o,
                    "| {} | `{}` | {} | {:#x} | {} |",
                    bits_label(f.field.msb(), f.field.lsb),
                    f.name,
                    f.access.label(),
                    f.reset,
                    cell(f.desc)
                );
            }
            let _ = writeln!(o);
        }
    }

    let _ = writeln!(o, "## Command protocol\n\n{COMMAND_PROTOCOL}\n");
    let _ = writeln!(o, "### Commands\n");
    let ctx = |op: CmdOpcode| match op {
        CmdOpcode::QpWrite | CmdOpcode::QpRead | CmdOpcode::QpModify => {
            format!("[QpCtx](#qpctx), {} B", QpCtx::SIZE)
        }
        CmdOpcode::CqWrite | CmdOpcode::CqRead => format!("[CqCtx](#cqctx), {} B", CqCtx::SIZE),
        CmdOpcode::MrWrite | CmdOpcode::MrRead => format!("[MrCtx](#mrctx), {} B", MrCtx::SIZE),
        CmdOpcode::Nop | CmdOpcode::MrInvalidate => "—".to_string(),
    };
    let _ = writeln!(o, "| OPCODE | Command | SystemVerilog | CMD_DATA | Meaning |\n|---|---|---|---|---|");
    for &op in CmdOpcode::ALL {
        let v = CmdOpcode::DESC.variants.iter().find(|v| v.code == op.code()).map(|v| v.desc).unwrap_or("");
        let _ = writeln!(
            o,
            "| {} | `{}` | `{}` | {} | {} |",
            op.code(),
            sv_upper(op.name()),
            enum_code_name(&CmdOpcode::DESC, op.name()),
            ctx(op),
            cell(v)
        );
    }
    let _ = writeln!(o, "\n### Command errors (`CMD_STATUS.ERROR`)\n");
    let _ = writeln!(o, "| Code | Name | SystemVerilog | Meaning |\n|---|---|---|---|");
    for v in CmdErrorCode::DESC.variants {
        let _ = writeln!(
            o,
            "| {} | `{}` | `{}` | {} |",
            v.code,
            sv_upper(v.name),
            enum_code_name(&CmdErrorCode::DESC, v.name),
            cell(v.desc)
        );
    }
    let _ = writeln!(o, "\n### QP state transitions\n\n{TRANSITIONS_TEXT}\n");
    let _ = writeln!(o, "| From | To | Required besides STATE | Also accepted |\n|---|---|---|---|");
    for t in QP_TRANSITIONS {
        let from = t.from.map(|s| s.name()).unwrap_or("any");
        let _ = writeln!(o, "| {from} | {} | {} | {} |", t.to.name(), mask_names(t.required), mask_names(t.optional));
    }
    let _ = writeln!(o, "\nThe mask bits are [QpAttrMask](#qpattrmask).\n");

    let _ = writeln!(o, "## Queue protocol\n\n{QUEUE_PROTOCOL}\n");
    let _ = writeln!(o, "## Interrupts\n\n{IRQ_TEXT}\n");
    let _ = writeln!(o, "## Bring-up\n\n{BRINGUP_TEXT}\n");

    let _ = writeln!(o, "## Descriptor layouts\n\n{DESC_CONVENTION}\n");
    let _ = writeln!(
        o,
        "| Descriptor | Bytes | Where |\n|---|---|---|\n\
         | [SqWqe](#sqwqe) | {} | SQ ring |\n| [RqWqe](#rqwqe) | {} | RQ ring |\n\
         | [Cqe](#cqe) | {} | CQ ring |\n| [QpCtx](#qpctx) | {} | CMD_DATA (QP commands) |\n\
         | [CqCtx](#cqctx) | {} | CMD_DATA (CQ commands) |\n| [MrCtx](#mrctx) | {} | CMD_DATA (MR commands) |\n\
         | [Sge](#sge) | 16 | inside SqWqe / RqWqe |\n",
        SqWqe::SIZE,
        RqWqe::SIZE,
        Cqe::SIZE,
        QpCtx::SIZE,
        CqCtx::SIZE,
        MrCtx::SIZE
    );
    for l in LAYOUTS {
        layout_table(&mut o, l);
    }

    let mut enums: Vec<&EnumDesc> = Vec::new();
    let mut bits: Vec<&BitsDesc> = Vec::new();
    fn walk(fs: &[LayoutField], enums: &mut Vec<&'static EnumDesc>, bits: &mut Vec<&'static BitsDesc>) {
        for f in fs {
            match f.kind {
                FieldKind::Enum(e) if !enums.iter().any(|x| x.name == e.name) => enums.push(e),
                FieldKind::Bits(b) if !bits.iter().any(|x| x.name == b.name) => bits.push(b),
                FieldKind::Union(a) => walk(a, enums, bits),
                _ => {}
            }
        }
    }
    for l in LAYOUTS {
        walk(l.fields, &mut enums, &mut bits);
    }
    bits.push(&QpAttrMask::DESC);
    let _ =
        writeln!(o, "## Enumerations\n\nSystemVerilog: `roce_desc_pkg::<name>` (command codes: `roce_regs_pkg`).\n");
    for e in enums {
        enum_table(&mut o, e);
    }
    let _ = writeln!(
        o,
        "## Flags and bit fields\n\nSystemVerilog: `roce_desc_pkg::<name>` (QpAttrMask: `roce_regs_pkg`).\n"
    );
    for b in bits {
        bits_table(&mut o, b);
    }
    // One trailing newline.
    while o.ends_with("\n\n") {
        o.pop();
    }
    o
}

fn sv_upper(name: &str) -> String {
    super::sv::upper_snake(name)
}
