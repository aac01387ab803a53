//! The look of a figure: colours, font size, stroke widths.

use memscope_render::palette::Theme;

/// Which palette a figure is drawn in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// The page's light theme.
    Light,
    /// The page's dark theme.
    Dark,
    /// For papers and slides: white background, black text, thicker strokes and a
    /// font that holds when the figure is scaled to a column.
    Print,
}

impl Look {
    /// The name used by the CLI and the page (`light`, `dark`, `print`).
    pub fn name(self) -> &'static str {
        match self {
            Look::Light => "light",
            Look::Dark => "dark",
            Look::Print => "print",
        }
    }

    /// The look named `name`, if any.
    pub fn from_name(name: &str) -> Option<Look> {
        match name {
            "light" => Some(Look::Light),
            "dark" => Some(Look::Dark),
            "print" => Some(Look::Print),
            _ => None,
        }
    }
}

/// A figure's size in CSS pixels (the SVG's user units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Width.
    pub width_px: u32,
    /// Height.
    pub height_px: u32,
}

impl Size {
    /// The smallest figure drawn: below this, axes and legends no longer fit.
    pub const MIN: Size = Size {
        width_px: 240,
        height_px: 160,
    };

    /// `width_px × height_px`, raised to [`Size::MIN`].
    pub fn new(width_px: u32, height_px: u32) -> Size {
        Size {
            width_px: width_px.max(Size::MIN.width_px),
            height_px: height_px.max(Size::MIN.height_px),
        }
    }

    pub(crate) fn w(self) -> f64 {
        f64::from(self.width_px)
    }

    pub(crate) fn h(self) -> f64 {
        f64::from(self.height_px)
    }
}

/// Colours and sizes of one figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    /// The palette.
    pub look: Look,
    /// Body text size, px (titles are 1.3×).
    pub font_px: f64,
}

/// The page's text size.
const PAGE_FONT_PX: f64 = 11.0;

/// In print, the font is this fraction of the figure's width: a figure scaled to a
/// 240 pt column (a two-column paper) then sets its text at 240 / 40 = 6 pt, the
/// smallest size journals accept in figures; a full-width (500 pt) figure at 12.5 pt.
/// Long texts (titles, the grid's key) wrap to the width.
const PRINT_FONT_PER_WIDTH: f64 = 1.0 / 40.0;

impl Style {
    /// The style of `look` for a figure `size` wide.
    pub fn new(look: Look, size: Size) -> Style {
        let font_px = match look {
            Look::Print => (size.w() * PRINT_FONT_PER_WIDTH).clamp(12.0, 48.0),
            Look::Light | Look::Dark => PAGE_FONT_PX,
        };
        Style { look, font_px }
    }

    /// The render palette's theme whose overlay colours contrast with the background.
    pub fn theme(&self) -> Theme {
        match self.look {
            Look::Dark => Theme::Dark,
            Look::Light | Look::Print => Theme::Light,
        }
    }

    pub(crate) fn background(&self) -> &'static str {
        match self.look {
            Look::Light => "#ffffff",
            Look::Dark => "#17191e",
            Look::Print => "#ffffff",
        }
    }

    pub(crate) fn text(&self) -> &'static str {
        match self.look {
            Look::Light => "#1d2129",
            Look::Dark => "#e6e8ec",
            Look::Print => "#000000",
        }
    }

    pub(crate) fn muted(&self) -> &'static str {
        match self.look {
            Look::Light => "#5f6673",
            Look::Dark => "#9aa1ad",
            Look::Print => "#000000",
        }
    }

    /// Errors and out-of-memory marks.
    pub(crate) fn error(&self) -> &'static str {
        match self.look {
            Look::Light | Look::Print => "#b3261e",
            Look::Dark => "#ff8a80",
        }
    }

    /// Background of empty cells.
    pub(crate) fn panel(&self) -> &'static str {
        match self.look {
            Look::Light => "#f6f7f9",
            Look::Dark => "#1f2228",
            Look::Print => "#ffffff",
        }
    }

    /// Stroke width of axes and lines.
    pub(crate) fn stroke(&self) -> f64 {
        match self.look {
            Look::Print => (self.font_px / 10.0).max(1.0),
            Look::Light | Look::Dark => 1.0,
        }
    }

    /// Height of a line of text, px.
    pub(crate) fn line(&self) -> f64 {
        (self.font_px * 1.45).round()
    }

    /// `text` cut at spaces into lines of at most `width` px at `scale` × the body size.
    pub(crate) fn wrap(&self, text: &str, width: f64, scale: f64) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        let mut current = String::new();
        for word in text.split(' ') {
            let candidate = if current.is_empty() {
                word.to_owned()
            } else {
                format!("{current} {word}")
            };
            if !current.is_empty() && self.text_width(&candidate) * scale > width {
                lines.push(std::mem::replace(&mut current, word.to_owned()));
            } else {
                current = candidate;
            }
        }
        if !current.is_empty() || lines.is_empty() {
            lines.push(current);
        }
        lines
    }

    /// Rough width of `text` at the body size, px (for layout only: a label box or a
    /// margin; the browser and viewers measure the real glyphs).
    pub(crate) fn text_width(&self, text: &str) -> f64 {
        text.chars().count() as f64 * self.font_px * 0.6
    }
}
