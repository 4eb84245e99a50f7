//! `ib_read_bw` on roce-driver: perftest's RDMA READ bandwidth test (RC, one QP), with
//! perftest's command line (subset), Ethernet out-of-band exchange and result table, so it
//! pairs with the real `ib_read_bw` on any RoCEv2 peer.
//!
//! ```text
//! cargo run -p roce-driver --example read_bw                      # server (sim device)
//! cargo run -p roce-driver --example read_bw -- 127.0.0.1         # client
//! cargo run -p roce-driver --example read_bw -- --device vfio:0000:03:00.0 \
//!     --ip 192.168.1.2 --mac 02:00:00:00:00:02 -x 1 -F [server]    # a board
//! ```

mod common;

use clap::Parser;
use common::bw::{BwArgs, Verb};

/// ib_read_bw-compatible RDMA READ bandwidth test over roce-driver.
#[derive(Parser, Debug)]
#[command(name = "read_bw", version)]
struct Args {
    #[command(flatten)]
    bw: BwArgs,
}

fn main() {
    common::bw::main(Verb::Read, Args::parse().bw);
}
