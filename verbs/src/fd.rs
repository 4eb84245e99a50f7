//! File descriptors the library makes: eventfds (wake-ups, the simulated MSI) and pipes
//! (completion channels and the async event queue, which applications read and poll).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// An eventfd.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A non-blocking, close-on-exec eventfd.
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd has no memory preconditions; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor this function owns.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Add one to the counter (wakes pollers).
    pub fn signal(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a valid buffer to our own fd. A full counter (EAGAIN)
        // is still readable, which is all a signal needs.
        let _ = unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    /// Read and reset the counter (0 if it was 0).
    pub fn drain(&self) -> u64 {
        let mut b = [0u8; 8];
        // SAFETY: reads 8 bytes into a valid buffer from our own non-blocking fd.
        let n = unsafe { libc::read(self.0.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
        if n == 8 {
            u64::from_ne_bytes(b)
        } else {
            0
        }
    }

    /// The descriptor.
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// A pipe: (read end, write end), both close-on-exec; the write end non-blocking.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors this function owns.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on our own descriptor.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    Ok((r, w))
}

/// Write all of `data` to a descriptor (one write: records of pipes are at most PIPE_BUF
/// and so atomic).
pub fn write_record(fd: RawFd, data: &[u8]) -> bool {
    // SAFETY: writes from a valid buffer to a descriptor the caller holds open.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    n == data.len() as isize
}

/// Read exactly `out.len()` bytes (blocking, retried on EINTR and short reads); false at
/// end of file or on another error (errno is left as the failed call set it).
pub fn read_exact(fd: RawFd, out: &mut [u8]) -> bool {
    let mut got = 0;
    while got < out.len() {
        // SAFETY: reads into the unfilled part of a valid buffer.
        let n = unsafe { libc::read(fd, out[got..].as_mut_ptr().cast(), out.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        } else {
            return false;
        }
    }
    true
}

/// Wait until one of `fds` is readable or `timeout` passes (None: no limit). Returns the
/// readable ones' indices.
pub fn poll_in(fds: &[RawFd], timeout: Option<Duration>) -> Vec<usize> {
    let mut p: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `p` holds `p.len()` pollfds; `tsp` is NULL or points at a live timespec.
    let n = unsafe { libc::ppoll(p.as_mut_ptr(), p.len() as libc::nfds_t, tsp, std::ptr::null()) };
    if n <= 0 {
        return Vec::new();
    }
    p.iter().enumerate().filter(|(_, q)| q.revents != 0).map(|(i, _)| i).collect()
}
