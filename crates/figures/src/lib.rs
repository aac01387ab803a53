//! Every figure memscope draws, as an SVG document: vector shapes, text as text, axes
//! with their ticks, a legend. The page exports these documents (and rasterises them to
//! PNG at a chosen size and pixel density); `memscope plot` writes the same documents
//! from the same inputs, so a figure in a paper is the figure on the screen.
//!
//! Each figure is a function from the data the page already holds to a `String`:
//!
//! | figure | function | input |
//! |---|---|---|
//! | configuration grid | [`grid::svg`] | [`memscope_fleet::ConfigGrid`] |
//! | rank × time heatmap | [`heatmap::svg`] | [`memscope_fleet::Heatmap`] and row labels |
//! | overview bars | [`bars::svg`] | [`bars::Bars`] (one value per rank) |
//! | compare curves | [`curves::svg`] | [`memscope_fleet::Curves`] |
//! | memory timeline, flame graph, segment timeline, call-site lanes | [`plot::svg`] | a [`plot::Plot`] made from the render crate's layout ([`plot::timeline`], [`plot::flame`], [`plot::rows`]) |
//!
//! A [`Style`] chooses the look: the page's light or dark theme, or *print* (white
//! background, black text, thicker strokes, and a font that scales with the width so
//! it stays readable once the figure is shrunk to a paper's column). Sizes are in CSS
//! pixels ([`Size`]); the page multiplies them by the pixel density when it
//! rasterises, so a PNG is `width × density` by `height × density` pixels.
//!
//! Plain Rust: no browser API, no clock; tested natively against hand-computed cases.

pub mod bars;
pub mod curves;
pub mod grid;
pub mod heatmap;
pub mod plot;
pub mod scale;
mod style;
mod svg;

pub use style::{Look, Size, Style};
pub use svg::XKind;
