//! Stop strings over a token stream: text is released only once it cannot be the start of
//! a stop string, so a matched stop is never sent to the client.

/// Holds back generated text that could still turn into one of the stop strings.
#[derive(Debug, Default)]
pub struct StopFilter {
    stops: Vec<String>,
    /// Text received but not released yet (always a prefix of some stop string).
    held: String,
}

/// What one piece of generated text released.
#[derive(Debug, PartialEq, Eq)]
pub struct Released {
    pub text: String,
    /// The stop string that matched: generation ends, and `text` ends right before it.
    pub stop: Option<String>,
}

impl StopFilter {
    pub fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
        }
    }

    /// Adds a piece of text; returns what is safe to send.
    pub fn push(&mut self, piece: &str) -> Released {
        self.held.push_str(piece);
        // Every stop occurrence starts inside `held`: text before it was released only
        // because no stop could start there.
        let first_match = self
            .stops
            .iter()
            .filter_map(|s| Some((self.held.find(s.as_str())?, s)))
            .min_by_key(|(at, _)| *at);
        if let Some((at, stop)) = first_match {
            let released = Released {
                text: self.held[..at].to_string(),
                stop: Some(stop.clone()),
            };
            self.held.clear();
            return released;
        }
        let keep_from = self.longest_partial_suffix();
        let text = self.held[..keep_from].to_string();
        self.held.drain(..keep_from);
        Released { text, stop: None }
    }

    /// The text still held when generation ends for another reason.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Where the longest suffix of `held` that is a proper prefix of a stop begins
    /// (`held.len()` when there is none).
    fn longest_partial_suffix(&self) -> usize {
        self.held
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                let tail = &self.held[i..];
                self.stops.iter().any(|s| s.starts_with(tail))
            })
            .unwrap_or(self.held.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (Vec<String>, bool, String) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut f = StopFilter::new(&stops);
        let mut out = Vec::new();
        for p in pieces {
            let r = f.push(p);
            out.push(r.text);
            if r.stop.is_some() {
                return (out, true, String::new());
            }
        }
        let rest = f.finish();
        (out, false, rest)
    }

    #[test]
    fn text_without_stops_passes_through() {
        assert_eq!(
            run(&[], &["a", "b"]),
            (vec!["a".into(), "b".into()], false, String::new())
        );
    }

    #[test]
    fn a_stop_inside_one_piece_cuts_before_it() {
        assert_eq!(
            run(&["\n\n"], &["hi\n\nUser"]),
            (vec!["hi".into()], true, String::new())
        );
    }

    #[test]
    fn a_stop_split_across_pieces_is_held_then_dropped() {
        assert_eq!(
            run(&["</end>"], &["ok</", "en", "d> more"]),
            (
                vec!["ok".into(), String::new(), String::new()],
                true,
                String::new()
            )
        );
    }

    #[test]
    fn a_false_start_is_released_once_it_cannot_match() {
        assert_eq!(
            run(&["STOP"], &["ST", "ay"]),
            (vec![String::new(), "STay".into()], false, String::new())
        );
    }

    #[test]
    fn held_text_comes_out_at_the_end() {
        assert_eq!(
            run(&["STOP"], &["go S"]),
            (vec!["go ".into()], false, "S".into())
        );
    }

    #[test]
    fn the_earliest_of_several_stops_wins() {
        assert_eq!(
            run(&["bb", "a"], &["xbba"]),
            (vec!["x".into()], true, String::new())
        );
    }

    #[test]
    fn multibyte_text_splits_on_char_boundaries() {
        assert_eq!(
            run(&["é!"], &["café", "?"]),
            (vec!["caf".into(), "é?".into()], false, String::new())
        );
    }

    #[test]
    fn the_matched_stop_is_named() {
        let stops = ["bb".to_string(), "a".to_string()];
        let mut f = StopFilter::new(&stops);
        assert_eq!(f.push("xab").stop.as_deref(), Some("a"));
        let mut f = StopFilter::new(&stops);
        assert_eq!(f.push("xbba").stop.as_deref(), Some("bb"));
    }
}
