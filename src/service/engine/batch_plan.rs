//! What one batch step decodes: every generating sequence's last token, then prompt chunks
//! of the requests still prefilling, in arrival order, as far as the batch has room. A new
//! request's prompt so advances every step while the others keep generating, which bounds
//! its time to first token by its length, not by the other replies.

/// One active request's next chunk in the canonical schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demand {
    /// Tokens of its next chunk (1 for a generating sequence).
    pub len: usize,
    /// The chunk ends with the token to sample from (a generating sequence, or the last
    /// prompt token).
    pub logits: bool,
}

/// Tokens each request decodes this step (0: not this step), for a batch of `cap` tokens.
/// Requests whose chunk carries logits come first (one token each, they are waiting to
/// sample), then prompt chunks, shortened to the room left. A shortened chunk never keeps
/// logits: the caller decodes the rest next step.
pub fn plan_step(demands: &[Demand], cap: usize) -> Vec<usize> {
    let mut take = vec![0; demands.len()];
    let mut room = cap;
    for (i, d) in demands.iter().enumerate() {
        if d.logits && d.len <= room && d.len > 0 {
            take[i] = d.len;
            room -= d.len;
        }
    }
    for (i, d) in demands.iter().enumerate() {
        if room == 0 {
            break;
        }
        if !d.logits && d.len > 0 {
            take[i] = d.len.min(room);
            room -= take[i];
        }
    }
    take
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn gen() -> Demand {
        Demand {
            len: 1,
            logits: true,
        }
    }
    const fn prefill(len: usize) -> Demand {
        Demand { len, logits: false }
    }

    #[test]
    fn one_request_gets_its_whole_chunk() {
        assert_eq!(plan_step(&[prefill(256)], 256), vec![256]);
        assert_eq!(plan_step(&[gen()], 256), vec![1]);
    }

    #[test]
    fn generating_sequences_go_first_and_prefill_takes_the_rest() {
        let d = [prefill(256), gen(), gen(), gen()];
        assert_eq!(plan_step(&d, 256), vec![253, 1, 1, 1]);
    }

    #[test]
    fn prompts_advance_in_arrival_order() {
        let d = [prefill(200), prefill(200), gen()];
        assert_eq!(plan_step(&d, 256), vec![200, 55, 1]);
        assert_eq!(plan_step(&d, 201), vec![200, 0, 1]);
    }

    #[test]
    fn a_full_batch_leaves_the_rest_for_the_next_step() {
        let d = [gen(), gen(), prefill(10)];
        assert_eq!(plan_step(&d, 2), vec![1, 1, 0]);
    }

    #[test]
    fn nothing_to_do_plans_nothing() {
        assert_eq!(plan_step(&[], 256), Vec::<usize>::new());
        assert_eq!(plan_step(&[prefill(0)], 256), vec![0]);
    }
}
