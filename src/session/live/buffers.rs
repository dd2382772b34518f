//! The buffers a restore reads into, kept for the process's next restore: a server or a
//! chat restores session after session, and faulting in fresh memory can cost about as much
//! as reading it from disk (`bench restore` shows it). The allocator keeps buffers below 32 MiB
//! on its own heap, but an 8B model's chunks hold a 32 MiB page and more, and a hybrid's
//! recurrent state 150 MiB: mapped and unmapped by every restore without this.

use std::sync::{Mutex, PoisonError};

/// The most bytes of buffers a finished restore leaves for the next one: one restore's
/// worth on two cores, two chunk buffers per stream, a hybrid's recurrent state, and a tail
/// record the careful path reads whole (Qwen3.5-27B's cache: five 16 MiB buffers and
/// 150 MiB).
pub const KEPT_BYTES: usize = 256 << 20;

/// The most buffers kept: a restore on two cores reads into at most six at once.
const KEPT_BUFFERS: usize = 6;

static KEPT: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// A chunk buffer an earlier restore left (its memory already faulted in), or an empty one.
/// The smallest goes first, so a hybrid's state buffer stays for [`kept_buffer_for`].
pub(super) fn kept_buffer() -> Vec<u8> {
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    let smallest = (0..kept.len()).min_by_key(|&i| kept[i].capacity());
    smallest.map(|i| kept.swap_remove(i)).unwrap_or_default()
}

/// A kept buffer of at least `len` bytes' capacity (the smallest such), or an empty one.
pub(super) fn kept_buffer_for(len: usize) -> Vec<u8> {
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    let fitting = (0..kept.len())
        .filter(|&i| kept[i].capacity() >= len)
        .min_by_key(|&i| kept[i].capacity());
    fitting.map(|i| kept.swap_remove(i)).unwrap_or_default()
}

/// `buffer` holding exactly `len` bytes for a read to overwrite, and whether its memory is
/// fresh. A buffer without the room is replaced by zeroed memory the allocator maps lazily,
/// so its pages are first touched by the reading threads (which fault them in in parallel,
/// and only then: asking again for memory that is in walks its page tables for nothing).
pub(super) fn sized(mut buffer: Vec<u8>, len: usize) -> (Vec<u8>, bool) {
    if buffer.capacity() < len {
        free_later(vec![buffer]);
        return (vec![0; len], true);
    }
    buffer.resize(len, 0);
    (buffer, false)
}

/// Keeps a finished restore's buffers for the next one, up to [`KEPT_BYTES`] in
/// [`KEPT_BUFFERS`], and frees the rest on a thread of its own: unmapping tens of megabytes
/// takes about a millisecond per 10 MB here, and the session is ready once they are loaded.
pub(super) fn keep_or_free(buffers: Vec<Vec<u8>>) {
    let rest = {
        let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
        keep(&mut kept, buffers)
    };
    free_later(rest);
}

/// Moves the largest of `buffers` that fit [`KEPT_BYTES`] and [`KEPT_BUFFERS`] into `kept`;
/// returns the others.
fn keep(kept: &mut Vec<Vec<u8>>, mut buffers: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    buffers.sort_by_key(|b| std::cmp::Reverse(b.capacity()));
    let mut held: usize = kept.iter().map(Vec::capacity).sum();
    let mut rest = Vec::new();
    for b in buffers {
        let fits = held + b.capacity() <= KEPT_BYTES && kept.len() < KEPT_BUFFERS;
        if b.capacity() > 0 && fits {
            held += b.capacity();
            kept.push(b);
        } else {
            rest.push(b);
        }
    }
    rest
}

/// Frees buffers on a thread of its own.
pub(super) fn free_later(buffers: Vec<Vec<u8>>) {
    if buffers.iter().all(|b| b.capacity() == 0) {
        return;
    }
    // Without a thread (the system refuses one) they are freed here, as usual.
    let _ = std::thread::Builder::new()
        .name("kvrun-free".into())
        .spawn(move || drop(buffers));
}

#[cfg(test)]
mod tests {
    use super::{keep, sized, KEPT_BYTES};

    /// Buffers of these capacities (reserved, never touched).
    fn buffers(mib: &[usize]) -> Vec<Vec<u8>> {
        mib.iter().map(|&m| Vec::with_capacity(m << 20)).collect()
    }

    fn mib(buffers: &[Vec<u8>]) -> Vec<usize> {
        buffers.iter().map(|b| b.capacity() >> 20).collect()
    }

    #[test]
    fn a_restore_keeps_at_most_six_buffers_within_the_budget() {
        let mut kept = Vec::new();
        let rest = keep(&mut kept, buffers(&[24, 32, 0, 32, 32, 16, 32, 8, 4]));
        assert_eq!(
            (mib(&kept), mib(&rest)),
            (vec![32, 32, 32, 32, 24, 16], vec![8, 4, 0])
        );
        // Nothing more while six are kept; a restore takes them before it gives any back.
        assert_eq!(mib(&keep(&mut kept, buffers(&[16]))), vec![16]);
        kept.clear();
        let over = (KEPT_BYTES >> 20) + 1;
        let rest = keep(&mut kept, buffers(&[over, 150, 32, 32, 32, 100]));
        assert_eq!(
            (mib(&kept), mib(&rest)),
            (vec![150, 100], vec![over, 32, 32, 32])
        );
    }

    #[test]
    fn a_sized_buffer_holds_exactly_the_length_asked() {
        let mut reused = vec![7u8; 10];
        reused.reserve(90);
        let at = reused.as_ptr();
        let (grown, fresh) = sized(reused, 50);
        assert_eq!((grown.len(), grown.as_ptr(), fresh), (50, at, false));
        let (shrunk, fresh) = sized(grown, 5);
        assert_eq!((shrunk.len(), fresh), (5, false));
        let (new, fresh) = sized(vec![1u8; 4], 1 << 20);
        assert_eq!((new.len(), fresh), (1 << 20, true));
    }
}
