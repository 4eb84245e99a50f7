//! The simulated network: links, nodes (an engine with its host memory and the driver
//! backend), the Verilated engine as a node and the model beside it, two connected engines,
//! and an engine on a datagram socket.

pub mod fabric;
pub mod hdl;
pub mod netdev;
pub mod node;
pub mod pair;
pub mod shadow;
