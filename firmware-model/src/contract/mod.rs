//! The host contract: the BAR0 register map and the descriptor layouts the engine, the
//! model and the driver share, written once as data.
//!
//! Everything here is declared with the macros in `macros.rs`, which produce both the
//! typed Rust items and static tables ([`regs::ALL`], [`LAYOUTS`], the `DESC` of every
//! enum and flag set). The generators walk those tables:
//!
//! - [`sv::regs_pkg`] writes `hdl/rtl/gen/roce_regs_pkg.sv` (addresses, field LSB/width,
//!   reset values, command codes),
//! - [`sv::desc_pkg`] writes `hdl/rtl/gen/roce_desc_pkg.sv` (descriptors as packed structs,
//!   byte offsets and widths, enum codes, flag bits),
//! - [`md::register_map`] writes `docs/register-map.md`, the hardware team's reference,
//!   with the command and queue protocols.
//!
//! [`generated_files`] lists them for `roce-gen-hdl`; a test checks the committed copies
//! are current.
//!
//! # Rust API
//!
//! - [`regs`]: `regs::CTRL` (a `u32` byte offset) and `regs::ctrl::ENABLE` (a [`Field`]
//!   with `get`, `set`, `val`), for every register.
//! - Descriptors [`Sge`], [`SqWqe`], [`RqWqe`], [`Cqe`], [`QpCtx`], [`CqCtx`], [`MrCtx`]:
//!   plain structs with pub typed fields, `SIZE`, `LAYOUT`, `encode() -> [u8; SIZE]`,
//!   `decode(&[u8]) -> Result<Self, ContractError>` and `validate()`.
//! - Enumerations with explicit codes and `TryFrom<u8>`: [`SqOpcode`], [`CqeOpcode`],
//!   [`CqeStatus`], [`QpState`], [`QpType`], [`PathMtu`], [`Encap`], [`CmdOpcode`],
//!   [`CmdErrorCode`]; flag sets [`SqFlags`], [`CqeFlags`], [`CqeOwner`], [`AccessFlags`],
//!   [`CqFlags`], [`CqState`], [`QpAttrMask`]; the bit-field [`VlanTag`].
//! - Command rules: [`QP_TRANSITIONS`], [`qp_modify_check`], [`qp_write_check`],
//!   [`qp_error_enters_err`].
//!
//! ```
//! use roce_model::contract::*;
//!
//! let cqe = Cqe {
//!     wr_id: 7,
//!     byte_len: 2500,
//!     qpn: 0x11,
//!     opcode: CqeOpcode::Recv,
//!     status: CqeStatus::Success,
//!     owner: CqeOwner::PHASE,
//!     src_qp: 0x12,
//!     ..Cqe::default()
//! };
//! let bytes: [u8; Cqe::SIZE] = cqe.encode();
//! assert_eq!(bytes[20], 0x80);
//! assert_eq!(Cqe::decode(&bytes), Ok(cqe));
//! assert!(matches!(Cqe::decode(&bytes[..31]), Err(ContractError::TooShort { .. })));
//! ```

#[macro_use]
mod macros;

mod cmd;
mod desc;
pub mod md;
mod meta;
pub mod records;
pub mod regs;
pub mod sv;
mod types;

pub use cmd::*;
pub use desc::*;
pub use meta::*;
pub use types::*;

/// The files generated from the contract: (path relative to the repository root,
/// contents). `hdlgen::generated_files` includes them.
pub fn generated_files() -> Vec<(&'static str, String)> {
    vec![
        ("hdl/rtl/gen/roce_regs_pkg.sv", sv::regs_pkg()),
        ("hdl/rtl/gen/roce_desc_pkg.sv", sv::desc_pkg()),
        ("hdl/rtl/gen/roce_rec_pkg.sv", sv::records_pkg()),
        ("docs/register-map.md", md::register_map()),
    ]
}
