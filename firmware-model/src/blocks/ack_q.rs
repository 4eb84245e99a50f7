//! Model of `hdl/rtl/roce_ack_q.sv`: the ACK/NAK a QP owes (the engine's coalescing rule,
//! [`ack_merge`]) and the order QPs are served in (the engine's ACK queue: a QP keeps its
//! place while it owes, a reset QP's place is skipped). Operation-level: the lockstep test
//! applies requests, clears and sends in the order the HDL took them.

use std::collections::VecDeque;

use crate::engine::qp_ctx::AckOwed;
use crate::engine::resp::ack_merge;

/// An ACK/NAK sent: (QP, PSN, syndrome, MSN).
pub type AckSent = (u32, u32, u8, u32);

/// The coalescer's state.
#[derive(Clone, Debug)]
pub struct RoceAckQ {
    owed: Vec<Option<AckOwed>>,
    queued: Vec<bool>,
    fifo: VecDeque<u32>,
}

impl RoceAckQ {
    /// Nothing owed, for `2^log_n` QPs.
    pub fn new(log_n: u32) -> Self {
        let n = 1usize << log_n;
        RoceAckQ { owed: vec![None; n], queued: vec![false; n], fifo: VecDeque::new() }
    }

    /// QP `qpn` comes to owe an ACK/NAK.
    pub fn request(&mut self, qpn: u32, psn: u32, syndrome: u8, msn: u32) {
        let i = qpn as usize % self.owed.len();
        self.owed[i] = Some(ack_merge(self.owed[i], AckOwed { psn, syndrome, msn, ready: 0 }));
        if !self.queued[i] {
            self.queued[i] = true;
            self.fifo.push_back(i as u32);
        }
    }

    /// QP `qpn` owes nothing any more (its place in the queue is skipped when it comes up).
    pub fn clear(&mut self, qpn: u32) {
        let i = qpn as usize % self.owed.len();
        self.owed[i] = None;
    }

    /// The next ACK/NAK to send, if any QP owes one.
    pub fn send(&mut self) -> Option<AckSent> {
        while let Some(q) = self.fifo.pop_front() {
            self.queued[q as usize] = false;
            if let Some(a) = self.owed[q as usize].take() {
                return Some((q, a.psn, a.syndrome, a.msn));
            }
        }
        None
    }

    /// Pop the places of cleared QPs at the head of the queue, as the HDL does while it is
    /// idle (the lockstep test calls this after a drain, when nothing is owed).
    pub fn drop_stale(&mut self) {
        while let Some(&q) = self.fifo.front() {
            if self.owed[q as usize].is_some() {
                break;
            }
            self.fifo.pop_front();
            self.queued[q as usize] = false;
        }
    }

    /// Whether a QP owes one.
    pub fn pending(&self) -> bool {
        self.fifo.iter().any(|&q| self.owed[q as usize].is_some())
    }
}
