//! Faulting in fresh memory before it is filled. On this kind of VM the first write to a
//! newly mapped page costs more than the copy that fills it (the kernel zeroes and maps
//! each 4 KiB page on its own fault), and asking for the whole range at once with
//! `MADV_POPULATE_WRITE` does the same work in one pass, faster. A restore of a large
//! model's session writes its whole state blob (gigabytes for an 8B model's long session)
//! into such fresh memory.

/// Populates `buf`'s whole pages for writing, so that filling it takes no page faults.
/// Returns whether the kernel did it; when it cannot (before Linux 5.14, or another OS)
/// the buffer is unchanged and its pages fault in as it is written, as before.
pub fn prefault(buf: &mut [u8]) -> bool {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = (buf.as_mut_ptr() as usize).next_multiple_of(PAGE);
        let end = (buf.as_mut_ptr() as usize + buf.len()) / PAGE * PAGE;
        if end <= start {
            return true;
        }
        // SAFETY: [start, end) lies inside `buf`, which we borrow mutably, so no other
        // reference sees the range. MADV_POPULATE_WRITE only faults the pages in for
        // writing; it never changes their contents (already-present pages are kept, new
        // anonymous ones read as zero, as they would on their first fault).
        let rc = unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                end - start,
                libc::MADV_POPULATE_WRITE,
            )
        };
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = buf;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::prefault;

    #[test]
    fn prefaulting_keeps_the_contents() {
        let mut buf = vec![0u8; 3 << 20];
        buf[5] = 7;
        buf[(2 << 20) + 1] = 9;
        prefault(&mut buf);
        assert_eq!(buf[5], 7);
        assert_eq!(buf[(2 << 20) + 1], 9);
        assert_eq!(buf.iter().map(|&b| b as usize).sum::<usize>(), 16);
        prefault(&mut buf[1..3]);
    }
}
