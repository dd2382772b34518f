//! The input box's text: a multi-line buffer with a cursor, and the history of sent
//! messages. Pure data and string handling, so it is tested without a terminal.

use unicode_width::UnicodeWidthChar;

/// The text being typed. `cursor` is a byte offset into `text`, always on a char boundary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputEditor {
    text: String,
    cursor: usize,
    history: Vec<String>,
    /// Which history entry is shown while walking it with Up/Down; None when editing fresh.
    browsing: Option<usize>,
    /// What was typed before history walking began, given back when Down walks past the end.
    draft: String,
}

impl InputEditor {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    #[cfg(test)]
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
        self.browsing = None;
    }

    /// Inserts a paste whole. Terminals send CR or CRLF for line breaks; keep LF only.
    pub fn insert_str(&mut self, s: &str) {
        let clean = s.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
        self.browsing = None;
    }

    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    /// Start of the current line (not of the whole text: the input can hold many lines).
    pub fn home(&mut self) {
        self.cursor = self.line_start(self.cursor);
    }

    pub fn end(&mut self) {
        self.cursor = self.line_end(self.cursor);
    }

    /// Ctrl-W / Alt-Backspace: the word before the cursor and the spaces after it.
    pub fn delete_word_back(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches([' ', '\t']);
        let start = trimmed
            .rfind(|c: char| c.is_whitespace())
            .map(|i| i + 1)
            .unwrap_or(0);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl-U: everything on the current line before the cursor.
    pub fn clear_to_line_start(&mut self) {
        let start = self.line_start(self.cursor);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// Takes the text out for sending and remembers it in the history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    /// Up: to the line above inside a multi-line input, else to the previous history entry.
    pub fn up(&mut self) {
        let start = self.line_start(self.cursor);
        if start > 0 {
            let column = self.text[start..self.cursor].chars().count();
            let prev_start = self.line_start(start - 1);
            self.cursor = self.at_column(prev_start, column);
            return;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.show_history(Some(next));
    }

    /// Down: to the line below, else to the next history entry, and past the newest one back
    /// to what was being typed.
    pub fn down(&mut self) {
        let end = self.line_end(self.cursor);
        if end < self.text.len() {
            let column = self.text[self.line_start(self.cursor)..self.cursor]
                .chars()
                .count();
            self.cursor = self.at_column(end + 1, column);
            return;
        }
        match self.browsing {
            None => {}
            Some(i) if i + 1 < self.history.len() => self.show_history(Some(i + 1)),
            Some(_) => self.show_history(None),
        }
    }

    fn show_history(&mut self, entry: Option<usize>) {
        self.text = match entry {
            Some(i) => self.history[i].clone(),
            None => std::mem::take(&mut self.draft),
        };
        self.browsing = entry;
        self.cursor = self.text.len();
    }

    fn line_start(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0)
    }

    fn line_end(&self, at: usize) -> usize {
        self.text[at..]
            .find('\n')
            .map(|i| at + i)
            .unwrap_or(self.text.len())
    }

    /// The byte offset `column` chars into the line starting at `start`, or its end.
    fn at_column(&self, start: usize, column: usize) -> usize {
        let end = self.line_end(start);
        self.text[start..end]
            .char_indices()
            .nth(column)
            .map(|(i, _)| start + i)
            .unwrap_or(end)
    }

    /// The text broken into rows of at most `width` columns (hard breaks at newlines, soft
    /// ones where a row is full), and the cursor's (row, column) in them.
    pub fn layout(&self, width: u16) -> (Vec<String>, (usize, u16)) {
        let width = width.max(1) as usize;
        let mut rows = vec![String::new()];
        let mut row_width = 0usize;
        let mut cursor = (0, 0u16);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor = (rows.len() - 1, row_width as u16);
            }
            if c == '\n' {
                rows.push(String::new());
                row_width = 0;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if row_width + w > width {
                rows.push(String::new());
                row_width = 0;
                if i == self.cursor {
                    cursor = (rows.len() - 1, 0);
                }
            }
            rows.last_mut().expect("rows start non-empty").push(c);
            row_width += w;
        }
        if self.cursor == self.text.len() {
            // A cursor at the very end of a full row wraps onto a new one.
            if row_width >= width {
                rows.push(String::new());
                row_width = 0;
            }
            cursor = (rows.len() - 1, row_width as u16);
        }
        (rows, cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &str) -> InputEditor {
        let mut e = InputEditor::default();
        e.insert_str(s);
        e
    }

    #[test]
    fn history_walks_back_and_returns_the_draft() {
        let mut e = InputEditor::default();
        for m in ["first", "second"] {
            e.insert_str(m);
            e.take();
        }
        e.insert_str("draft");
        e.up();
        assert_eq!(e.text(), "second");
        e.up();
        assert_eq!(e.text(), "first");
        e.up();
        assert_eq!(e.text(), "first", "stops at the oldest");
        e.down();
        assert_eq!(e.text(), "second");
        e.down();
        assert_eq!(e.text(), "draft");
    }

    #[test]
    fn up_moves_between_lines_before_history() {
        let mut e = typed("ab\ncdef");
        e.take();
        e.insert_str("xy\nzzzz");
        e.up();
        assert_eq!(e.text(), "xy\nzzzz", "first Up moves to the line above");
        assert_eq!(e.cursor(), 2, "clamped to the shorter line");
        e.up();
        assert_eq!(e.text(), "ab\ncdef", "then history");
    }

    #[test]
    fn paste_keeps_everything_and_normalises_line_ends() {
        let big: String = (0..5000).map(|i| format!("line {i}\r\n")).collect();
        let e = typed(&big);
        assert_eq!(e.text().lines().count(), 5000);
        assert!(!e.text().contains('\r'));
    }

    #[test]
    fn word_and_line_deletion() {
        let mut e = typed("hello big world  ");
        e.delete_word_back();
        assert_eq!(e.text(), "hello big ");
        e.insert_str("x\nabc");
        e.clear_to_line_start();
        assert_eq!(e.text(), "hello big x\n");
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let e = typed("abcdef\ngh");
        let (rows, cursor) = e.layout(4);
        assert_eq!(rows, ["abcd", "ef", "gh"]);
        assert_eq!(cursor, (2, 2));
        let (rows, cursor) = typed("abcd").layout(4);
        assert_eq!(rows, ["abcd", ""]);
        assert_eq!(cursor, (1, 0));
    }
}
