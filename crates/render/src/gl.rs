//! The WebGL2 renderer: rectangles in one indexed draw, or their pixels as one
//! textured quad.
//!
//! Every shape memscope draws on the GPU is an axis-aligned rectangle in data
//! coordinates (x: µs or entry index, y: bytes, both relative to the strips' origins):
//! bands and aggregated bands (overlay curves are line strips). Every rectangle is four
//! vertices carrying it, drawn as two triangles in one indexed draw ([`crate::quads`]:
//! not instanced, which a software rasteriser pays per instance); a uniform maps data
//! to clip space, so panning and zooming redraw the same buffers instantly while the
//! worker lays out the new view. Rectangles narrower or shorter than a pixel are
//! widened to one pixel, so nothing vanishes. Ids from
//! [`AGGREGATE_BASE`](crate::AGGREGATE_BASE) on are aggregates, drawn first, in their
//! order; bands are drawn over them, in theirs. The selected allocation is lightened and
//! the hovered one tinted; their outlines are overlay lines that follow the band
//! ([`Strips::outline`](crate::Strips::outline)). [`palette::NO_STACK`](crate::palette::NO_STACK) is hatched.
//!
//! A view of many small rectangles is drawn from pixels instead
//! ([`Renderer::set_raster`]): the colour and the id of every pixel ([`Raster`]), as
//! two textures on one quad spanning the data rectangle they were filled for. A
//! software rasteriser pays per triangle, and a wide view of a long trace is tens of
//! thousands of rectangles a pixel wide; a quad costs the same whatever it shows
//! ([`pixels_cheaper`](crate::raster::pixels_cheaper) decides). Until the next layout
//! arrives the quad moves and stretches with the view, as the rectangles did. The
//! hovered and selected ids are tinted (or bordered) in the fragment shader, as the
//! rectangles' were.
//!
//! glow marks every GL call `unsafe` because native OpenGL can be misused into undefined
//! behaviour; on WebGL2 every call is validated by the browser. This module is the only
//! place memscope allows `unsafe`, for those calls alone.
#![allow(unsafe_code)]

use glow::HasContext;

use crate::quads::{quad_indices, Quads, INDICES_PER_QUAD};
use crate::raster::{PixelGrid, Raster};

const VERTEX: &str = r#"#version 300 es
layout(location = 0) in vec4 a_rect;
layout(location = 1) in vec4 a_color;
layout(location = 2) in uint a_id;
uniform vec4 u_map;      // x offset, x scale, y offset, y scale: data -> [0, 1]
uniform vec2 u_pixel;    // one device pixel in [0, 1] units
uniform uint u_selected;
uniform uint u_hovered;
out vec4 v_color;
out vec2 v_px;           // position inside the rect, in pixels from its corner
out vec2 v_size_px;      // rect size in pixels
flat out uint v_mark;    // 1 hovered, 2 selected
flat out uint v_hatch;   // 1: no call stack (alpha 254), drawn hatched
void main() {
    // The rect's four vertices are 4k..4k+3 (quads::quad_indices): corner x = bit 0, y = bit 1.
    int vertex = gl_VertexID & 3;
    vec2 corner = vec2(float(vertex & 1), float(vertex >> 1));
    float x0 = (a_rect.x - u_map.x) * u_map.y;
    float x1 = (a_rect.y - u_map.x) * u_map.y;
    float y0 = (a_rect.z - u_map.z) * u_map.w;
    float y1 = (a_rect.w - u_map.z) * u_map.w;
    // At least one pixel wide and tall.
    if (x1 - x0 < u_pixel.x) { x1 = x0 + u_pixel.x; }
    if (y1 - y0 < u_pixel.y) { y1 = y0 + u_pixel.y; }
    vec2 p = vec2(mix(x0, x1, corner.x), mix(y0, y1, corner.y));
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
    v_size_px = vec2(x1 - x0, y1 - y0) / u_pixel;
    v_px = corner * v_size_px;
    v_color = a_color;
    v_mark = a_id == 0xffffffffu ? 0u : (a_id == u_selected ? 2u : (a_id == u_hovered ? 1u : 0u));
    v_hatch = abs(a_color.a * 255.0 - 254.0) < 0.5 ? 1u : 0u;
}
"#;

/// The colour a fragment of either program draws, premultiplied: hatched where there is
/// no call stack, the selection (mark 2) lightened and the hover (mark 1) tinted, or
/// the outline colour on their edge where marked rectangles get borders (`u_border` 1;
/// otherwise their outlines are overlay lines).
const SHADE: &str = r#"
vec4 shade(vec4 c, bool hatched, uint mark, bool on_edge) {
    if (hatched && mod(gl_FragCoord.x + gl_FragCoord.y, 6.0) < 2.0) {
        c.rgb = mix(c.rgb, vec3(1.0), 0.45);
    }
    if (mark > 0u) {
        if (u_border == 1u && on_edge) {
            c = u_outline;
        } else if (mark == 2u) {
            c.rgb = mix(c.rgb, vec3(1.0), 0.25);
        } else if (u_border == 0u) {
            c.rgb = mix(c.rgb, vec3(1.0), 0.15);
        }
    }
    return vec4(c.rgb * c.a, c.a);
}
"#;

const FRAGMENT_HEAD: &str = r#"#version 300 es
precision mediump float;
in vec4 v_color;
in vec2 v_px;
in vec2 v_size_px;
flat in uint v_mark;
flat in uint v_hatch;
uniform vec4 u_outline;
uniform uint u_border;   // 1: outline marked rects here; 0: outlines are overlay lines
out vec4 out_color;
"#;

const FRAGMENT_MAIN: &str = r#"
void main() {
    float edge = min(min(v_px.x, v_size_px.x - v_px.x), min(v_px.y, v_size_px.y - v_px.y));
    bool on_edge = edge < (v_mark == 2u ? 2.0 : 1.5);
    vec4 c = vec4(v_color.rgb, v_hatch == 1u ? 1.0 : v_color.a);
    out_color = shade(c, v_hatch == 1u, v_mark, on_edge);
}
"#;

const PIXEL_VERTEX: &str = r#"#version 300 es
uniform vec4 u_map;      // as VERTEX's
uniform vec2 u_origin;   // the data point at the pixels' bottom left corner
uniform vec2 u_extent;   // the data width and height the pixels span
uniform vec2 u_size;     // the pixels' columns and rows
out highp vec2 v_texel;  // position in texels
void main() {
    // A triangle strip of four vertices: corner x = bit 0, y = bit 1.
    vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
    vec2 d = u_origin + corner * u_extent;
    vec2 p = vec2((d.x - u_map.x) * u_map.y, (d.y - u_map.z) * u_map.w);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
    v_texel = corner * u_size;
}
"#;

const PIXEL_FRAGMENT_HEAD: &str = r#"#version 300 es
precision highp float;
precision highp usampler2D;
in highp vec2 v_texel;
uniform sampler2D u_colors;
uniform usampler2D u_ids;
uniform vec2 u_size;
uniform uint u_selected;
uniform uint u_hovered;
uniform vec4 u_outline;
uniform uint u_border;   // as FRAGMENT_HEAD's
out vec4 out_color;
"#;

const PIXEL_FRAGMENT_MAIN: &str = r#"
// Whether a pixel within `width` texels of `t` shows another id: the edge of `id`'s area.
bool edge(ivec2 t, uint id, int width) {
    ivec2 top = ivec2(u_size) - 1;
    for (int k = 1; k <= width; k++) {
        if (texelFetch(u_ids, clamp(t + ivec2(k, 0), ivec2(0), top), 0).r != id
            || texelFetch(u_ids, clamp(t - ivec2(k, 0), ivec2(0), top), 0).r != id
            || texelFetch(u_ids, clamp(t + ivec2(0, k), ivec2(0), top), 0).r != id
            || texelFetch(u_ids, clamp(t - ivec2(0, k), ivec2(0), top), 0).r != id) {
            return true;
        }
    }
    return false;
}
void main() {
    ivec2 t = ivec2(clamp(floor(v_texel), vec2(0.0), u_size - 1.0));
    vec4 c = texelFetch(u_colors, t, 0);
    uint id = texelFetch(u_ids, t, 0).r;
    bool hatched = abs(c.a * 255.0 - 254.0) < 0.5;
    if (hatched) {
        c.a = 1.0;
    }
    uint mark = id == 0xffffffffu ? 0u : (id == u_selected ? 2u : (id == u_hovered ? 1u : 0u));
    // Neighbours are read only for a marked pixel that gets a border.
    bool on_edge = mark > 0u && u_border == 1u && edge(t, id, mark == 2u ? 2 : 1);
    out_color = shade(c, hatched, mark, on_edge);
}
"#;

const LINE_VERTEX: &str = r#"#version 300 es
layout(location = 0) in vec2 a_pos;
uniform vec4 u_map;
uniform vec2 u_shift;    // in [0, 1] units: draws a line again a pixel aside
void main() {
    vec2 p = vec2((a_pos.x - u_map.x) * u_map.y, (a_pos.y - u_map.z) * u_map.w) + u_shift;
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
"#;

const LINE_FRAGMENT: &str = r#"#version 300 es
precision mediump float;
uniform vec4 u_color;
out vec4 out_color;
void main() {
    out_color = vec4(u_color.rgb * u_color.a, u_color.a);
}
"#;

/// Overlay polylines: vertices and the strips (first vertex, count, RGBA8 colour).
struct Lines {
    program: glow::Program,
    vao: glow::VertexArray,
    buffer: glow::Buffer,
    strips: Vec<(i32, i32, u32)>,
    u_map: Option<glow::UniformLocation>,
    u_color: Option<glow::UniformLocation>,
    u_shift: Option<glow::UniformLocation>,
}

/// Outlines drawn over everything: vertices, and per polyline (first vertex, count,
/// whether it is the selection's, drawn two pixels wide).
struct Outlines {
    vao: glow::VertexArray,
    buffer: glow::Buffer,
    strips: Vec<(i32, i32, bool)>,
}

/// A set of rectangles on the GPU, four vertices each.
struct Batch {
    vao: glow::VertexArray,
    rects: glow::Buffer,
    colors: glow::Buffer,
    ids: glow::Buffer,
    /// The index buffer (bound in `vao`): [`quad_indices`] of `indexed` rectangles.
    indices: glow::Buffer,
    indexed: usize,
    /// The vertices last uploaded (kept for their capacity).
    quads: Quads,
}

/// A view's pixels on the GPU ([`Raster`]): colours and ids as textures.
struct Pixels {
    program: glow::Program,
    /// Attribute-less: the vertex shader makes the quad's corners from their index.
    vao: glow::VertexArray,
    colors: glow::Texture,
    ids: glow::Texture,
    /// Columns and rows uploaded (0: nothing to draw).
    size_px: (u32, u32),
    /// The data point at their bottom left corner, and the width and height they span.
    origin: (f64, f64),
    extent: (f64, f64),
    rectangles: usize,
    /// The widest and tallest texture this GPU takes (WebGL2 promises 2,048).
    max_size_px: u32,
    marks: Marks,
    u_origin: Option<glow::UniformLocation>,
    u_extent: Option<glow::UniformLocation>,
    u_size: Option<glow::UniformLocation>,
}

/// The uniforms both programs that fill the view share: the mapping, and how the
/// hovered and selected ids are marked.
struct Marks {
    u_map: Option<glow::UniformLocation>,
    u_selected: Option<glow::UniformLocation>,
    u_hovered: Option<glow::UniformLocation>,
    u_outline: Option<glow::UniformLocation>,
    u_border: Option<glow::UniformLocation>,
}

impl Marks {
    fn locate(gl: &glow::Context, program: glow::Program) -> Marks {
        unsafe {
            Marks {
                u_map: gl.get_uniform_location(program, "u_map"),
                u_selected: gl.get_uniform_location(program, "u_selected"),
                u_hovered: gl.get_uniform_location(program, "u_hovered"),
                u_outline: gl.get_uniform_location(program, "u_outline"),
                u_border: gl.get_uniform_location(program, "u_border"),
            }
        }
    }

    /// Sets them on the program in use: `map` as `u_map` takes it (x offset, x scale,
    /// y offset, y scale).
    unsafe fn set(&self, gl: &glow::Context, map: [f32; 4], marked: Marked) {
        let [x, sx, y, sy] = map;
        let [r, g, b, a] = marked.outline;
        gl.uniform_4_f32(self.u_map.as_ref(), x, sx, y, sy);
        gl.uniform_1_u32(self.u_border.as_ref(), u32::from(marked.borders));
        gl.uniform_1_u32(self.u_selected.as_ref(), marked.selected);
        gl.uniform_1_u32(self.u_hovered.as_ref(), marked.hovered);
        gl.uniform_4_f32(self.u_outline.as_ref(), r, g, b, a);
    }
}

/// What a frame marks: the hovered and selected ids, their outline colour, and whether
/// marked rectangles get a border.
#[derive(Clone, Copy)]
struct Marked {
    hovered: u32,
    selected: u32,
    outline: [f32; 4],
    borders: bool,
}

/// What the renderer draws: what was set last.
#[derive(Clone, Copy, PartialEq)]
enum Fill {
    /// The rectangles ([`Renderer::set_bands`]).
    Quads,
    /// The pixels ([`Renderer::set_raster`]).
    Pixels,
}

/// Where data coordinates land on the canvas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mapping {
    /// Data x (relative to the strips' origin) at the left edge.
    pub x_left: f64,
    /// Data x at the right edge.
    pub x_right: f64,
    /// Data y at the bottom edge.
    pub y_bottom: f64,
    /// Data y at the top edge.
    pub y_top: f64,
}

/// The timeline renderer.
pub struct Renderer {
    program: glow::Program,
    bands: Batch,
    pixels: Pixels,
    /// The pixels last filled (kept for their capacity).
    raster: Raster,
    fill: Fill,
    lines: Lines,
    marks: Marks,
    u_pixel: Option<glow::UniformLocation>,
    outlines: Outlines,
    /// Whether marked rects get a border (else their outlines are [`Outlines`]).
    borders: bool,
}

/// No allocation (never matches an instance id).
pub const NO_ID: u32 = u32::MAX;

fn compile(gl: &glow::Context, kind: u32, source: &str) -> Result<glow::Shader, String> {
    unsafe {
        let shader = gl.create_shader(kind)?;
        gl.shader_source(shader, source);
        gl.compile_shader(shader);
        if gl.get_shader_compile_status(shader) {
            Ok(shader)
        } else {
            Err(gl.get_shader_info_log(shader))
        }
    }
}

fn link(gl: &glow::Context, vertex: &str, fragment: &str) -> Result<glow::Program, String> {
    unsafe {
        let program = gl.create_program()?;
        let vs = compile(gl, glow::VERTEX_SHADER, vertex)?;
        let fs = compile(gl, glow::FRAGMENT_SHADER, fragment)?;
        gl.attach_shader(program, vs);
        gl.attach_shader(program, fs);
        gl.link_program(program);
        if !gl.get_program_link_status(program) {
            return Err(gl.get_program_info_log(program));
        }
        gl.delete_shader(vs);
        gl.delete_shader(fs);
        Ok(program)
    }
}

impl Renderer {
    /// Compiles the programs and creates empty buffers and textures.
    pub fn new(gl: &glow::Context) -> Result<Renderer, String> {
        let program = link(gl, VERTEX, &[FRAGMENT_HEAD, SHADE, FRAGMENT_MAIN].concat())?;
        let line_program = link(gl, LINE_VERTEX, LINE_FRAGMENT)?;
        let pixels = Self::pixels(gl)?;
        unsafe {
            let bands = Self::batch(gl)?;
            let (vao, buffer) = Self::line_buffer(gl)?;
            let lines = Lines {
                program: line_program,
                vao,
                buffer,
                strips: Vec::new(),
                u_map: gl.get_uniform_location(line_program, "u_map"),
                u_color: gl.get_uniform_location(line_program, "u_color"),
                u_shift: gl.get_uniform_location(line_program, "u_shift"),
            };
            let (vao, buffer) = Self::line_buffer(gl)?;
            let outlines = Outlines {
                vao,
                buffer,
                strips: Vec::new(),
            };
            Ok(Renderer {
                marks: Marks::locate(gl, program),
                u_pixel: gl.get_uniform_location(program, "u_pixel"),
                program,
                bands,
                pixels,
                raster: Raster::default(),
                fill: Fill::Quads,
                lines,
                outlines,
                borders: true,
            })
        }
    }

    unsafe fn line_buffer(gl: &glow::Context) -> Result<(glow::VertexArray, glow::Buffer), String> {
        let vao = gl.create_vertex_array()?;
        gl.bind_vertex_array(Some(vao));
        let buffer = gl.create_buffer()?;
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(buffer));
        gl.enable_vertex_attrib_array(0);
        gl.vertex_attrib_pointer_f32(0, 2, glow::FLOAT, false, 8, 0);
        gl.bind_vertex_array(None);
        Ok((vao, buffer))
    }

    /// Outlines the hovered and selected allocations with overlay polylines (from
    /// [`Strips::outline`](crate::Strips::outline)) instead of rect borders: `vertices`
    /// as x, y pairs; `strips` as (first vertex, vertex count, selected).
    pub fn set_outlines(
        &mut self,
        gl: &glow::Context,
        vertices: &[f32],
        strips: Vec<(i32, i32, bool)>,
    ) {
        self.borders = false;
        unsafe {
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(self.outlines.buffer));
            gl.buffer_data_u8_slice(
                glow::ARRAY_BUFFER,
                bytes_of_f32(vertices),
                glow::STATIC_DRAW,
            );
        }
        self.outlines.strips = strips;
    }

    fn pixels(gl: &glow::Context) -> Result<Pixels, String> {
        let program = link(
            gl,
            PIXEL_VERTEX,
            &[PIXEL_FRAGMENT_HEAD, SHADE, PIXEL_FRAGMENT_MAIN].concat(),
        )?;
        unsafe {
            let texture = || -> Result<glow::Texture, String> {
                let t = gl.create_texture()?;
                gl.bind_texture(glow::TEXTURE_2D, Some(t));
                for (name, value) in [
                    (glow::TEXTURE_MIN_FILTER, glow::NEAREST),
                    (glow::TEXTURE_MAG_FILTER, glow::NEAREST),
                    (glow::TEXTURE_WRAP_S, glow::CLAMP_TO_EDGE),
                    (glow::TEXTURE_WRAP_T, glow::CLAMP_TO_EDGE),
                ] {
                    gl.tex_parameter_i32(glow::TEXTURE_2D, name, value as i32);
                }
                Ok(t)
            };
            let pixels = Pixels {
                vao: gl.create_vertex_array()?,
                colors: texture()?,
                ids: texture()?,
                size_px: (0, 0),
                origin: (0.0, 0.0),
                extent: (1.0, 1.0),
                rectangles: 0,
                max_size_px: gl.get_parameter_i32(glow::MAX_TEXTURE_SIZE).max(2048) as u32,
                marks: Marks::locate(gl, program),
                u_origin: gl.get_uniform_location(program, "u_origin"),
                u_extent: gl.get_uniform_location(program, "u_extent"),
                u_size: gl.get_uniform_location(program, "u_size"),
                program,
            };
            gl.use_program(Some(program));
            gl.uniform_1_i32(gl.get_uniform_location(program, "u_colors").as_ref(), 0);
            gl.uniform_1_i32(gl.get_uniform_location(program, "u_ids").as_ref(), 1);
            gl.use_program(None);
            gl.bind_texture(glow::TEXTURE_2D, None);
            Ok(pixels)
        }
    }

    unsafe fn batch(gl: &glow::Context) -> Result<Batch, String> {
        let vao = gl.create_vertex_array()?;
        gl.bind_vertex_array(Some(vao));
        let rects = gl.create_buffer()?;
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(rects));
        gl.enable_vertex_attrib_array(0);
        gl.vertex_attrib_pointer_f32(0, 4, glow::FLOAT, false, 16, 0);
        let colors = gl.create_buffer()?;
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(colors));
        gl.enable_vertex_attrib_array(1);
        gl.vertex_attrib_pointer_f32(1, 4, glow::UNSIGNED_BYTE, true, 4, 0);
        let ids = gl.create_buffer()?;
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(ids));
        gl.enable_vertex_attrib_array(2);
        gl.vertex_attrib_pointer_i32(2, 1, glow::UNSIGNED_INT, 4, 0);
        let indices = gl.create_buffer()?;
        gl.bind_buffer(glow::ELEMENT_ARRAY_BUFFER, Some(indices));
        gl.bind_vertex_array(None);
        Ok(Batch {
            vao,
            rects,
            colors,
            ids,
            indices,
            indexed: 0,
            quads: Quads::default(),
        })
    }

    unsafe fn upload(
        gl: &glow::Context,
        batch: &mut Batch,
        rects: &[f32],
        colors: &[u32],
        ids: &[u32],
    ) {
        batch.quads.fill(rects, colors, ids);
        let q = &batch.quads;
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(batch.rects));
        gl.buffer_data_u8_slice(
            glow::ARRAY_BUFFER,
            bytes_of_f32(&q.rects),
            glow::STATIC_DRAW,
        );
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(batch.colors));
        gl.buffer_data_u8_slice(
            glow::ARRAY_BUFFER,
            bytes_of_u32(&q.colors),
            glow::STATIC_DRAW,
        );
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(batch.ids));
        gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, bytes_of_u32(&q.ids), glow::STATIC_DRAW);
        if q.len() > batch.indexed {
            // The indices only depend on the count: grown by doubling, never shrunk, so
            // a view of about the same size uploads none.
            let indexed = q.len().next_power_of_two();
            gl.bind_vertex_array(Some(batch.vao));
            gl.bind_buffer(glow::ELEMENT_ARRAY_BUFFER, Some(batch.indices));
            gl.buffer_data_u8_slice(
                glow::ELEMENT_ARRAY_BUFFER,
                bytes_of_u32(&quad_indices(indexed)),
                glow::STATIC_DRAW,
            );
            gl.bind_vertex_array(None);
            batch.indexed = indexed;
        }
    }

    /// Draws rectangles from now on: the bands (x0, x1, y0, y1 per instance; RGBA8
    /// colours; allocation ids).
    pub fn set_bands(&mut self, gl: &glow::Context, rects: &[f32], colors: &[u32], ids: &[u32]) {
        unsafe { Self::upload(gl, &mut self.bands, rects, colors, ids) }
        self.fill = Fill::Quads;
    }

    /// Draws pixels from now on: those of `rects` (`x0, x1, y0, y1` each), `colors` and
    /// `ids` filled over `grid` ([`Raster::fill_grid`]; see
    /// [`pixels_cheaper`](crate::raster::pixels_cheaper) for when they are cheaper).
    pub fn set_raster(
        &mut self,
        gl: &glow::Context,
        grid: PixelGrid,
        rects: &[f32],
        colors: &[u32],
        ids: &[u32],
    ) {
        self.fill = Fill::Pixels;
        self.raster.fill_grid(grid, rects, colors, ids);
        let (pixels, raster) = (&mut self.pixels, &self.raster);
        let (w, h) = (raster.width_px as i32, raster.height_px as i32);
        // The same size as the last: written in place (no new storage for the GPU
        // process to allocate, as every frame of a lens being panned uploads).
        let same = pixels.size_px == (raster.width_px, raster.height_px);
        let layers = [
            (
                pixels.colors,
                glow::RGBA8,
                glow::RGBA,
                glow::UNSIGNED_BYTE,
                &raster.colors,
            ),
            (
                pixels.ids,
                glow::R32UI,
                glow::RED_INTEGER,
                glow::UNSIGNED_INT,
                &raster.ids,
            ),
        ];
        unsafe {
            gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 4);
            for (texture, internal, format, ty, data) in layers {
                let data = glow::PixelUnpackData::Slice(Some(bytes_of_u32(data)));
                gl.bind_texture(glow::TEXTURE_2D, Some(texture));
                if same {
                    gl.tex_sub_image_2d(glow::TEXTURE_2D, 0, 0, 0, w, h, format, ty, data);
                } else {
                    gl.tex_image_2d(
                        glow::TEXTURE_2D,
                        0,
                        internal as i32,
                        w,
                        h,
                        0,
                        format,
                        ty,
                        data,
                    );
                }
            }
            gl.bind_texture(glow::TEXTURE_2D, None);
        }
        pixels.size_px = (raster.width_px, raster.height_px);
        pixels.origin = raster.origin;
        pixels.extent = raster.extent;
        pixels.rectangles = raster.rectangles;
    }

    /// Replaces the overlay polylines: `vertices` as x, y pairs; `strips` as (first
    /// vertex, vertex count, RGBA8 colour).
    pub fn set_lines(
        &mut self,
        gl: &glow::Context,
        vertices: &[f32],
        strips: Vec<(i32, i32, u32)>,
    ) {
        unsafe {
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(self.lines.buffer));
            gl.buffer_data_u8_slice(
                glow::ARRAY_BUFFER,
                bytes_of_f32(vertices),
                glow::STATIC_DRAW,
            );
        }
        self.lines.strips = strips;
    }

    /// The most pixel columns or rows the renderer can draw as pixels: a canvas's
    /// drawing buffer is kept within it (the browser scales it to the page).
    pub fn max_size_px(&self) -> u32 {
        self.pixels.max_size_px
    }

    /// Rectangles drawn per frame (for pixels: the rectangles they were filled from).
    pub fn instances(&self) -> i32 {
        match self.fill {
            Fill::Quads => self.bands.quads.len() as i32,
            Fill::Pixels => self.pixels.rectangles as i32,
        }
    }

    /// Draws into the current viewport of `width_px` × `height_px`, clearing to
    /// `background` (RGBA 0..1), outlining `hovered` and `selected` with `outline`.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        &self,
        gl: &glow::Context,
        width_px: u32,
        height_px: u32,
        map: Mapping,
        background: [f32; 4],
        outline: [f32; 4],
        hovered: u32,
        selected: u32,
    ) {
        unsafe {
            gl.viewport(0, 0, width_px as i32, height_px as i32);
            gl.clear_color(background[0], background[1], background[2], background[3]);
            gl.clear(glow::COLOR_BUFFER_BIT);
            gl.enable(glow::BLEND);
            gl.blend_func(glow::ONE, glow::ONE_MINUS_SRC_ALPHA);
            let sx = 1.0 / (map.x_right - map.x_left);
            let sy = 1.0 / (map.y_top - map.y_bottom);
            let map4 = [map.x_left as f32, sx as f32, map.y_bottom as f32, sy as f32];
            let marked = Marked {
                hovered,
                selected,
                outline,
                borders: self.borders,
            };
            let (batch, p) = (&self.bands, &self.pixels);
            match self.fill {
                Fill::Quads if !batch.quads.is_empty() => {
                    gl.use_program(Some(self.program));
                    self.marks.set(gl, map4, marked);
                    gl.uniform_2_f32(
                        self.u_pixel.as_ref(),
                        1.0 / width_px.max(1) as f32,
                        1.0 / height_px.max(1) as f32,
                    );
                    // Aggregates first, bands over them (the order of the vertices): a
                    // gap thinner than a pixel between two bands shows the aggregate
                    // colour, never the background.
                    gl.bind_vertex_array(Some(batch.vao));
                    gl.draw_elements(
                        glow::TRIANGLES,
                        (batch.quads.len() * INDICES_PER_QUAD) as i32,
                        glow::UNSIGNED_INT,
                        0,
                    );
                }
                Fill::Pixels if p.size_px.0 > 0 && p.size_px.1 > 0 => {
                    gl.use_program(Some(p.program));
                    p.marks.set(gl, map4, marked);
                    gl.uniform_2_f32(p.u_origin.as_ref(), p.origin.0 as f32, p.origin.1 as f32);
                    gl.uniform_2_f32(p.u_extent.as_ref(), p.extent.0 as f32, p.extent.1 as f32);
                    gl.uniform_2_f32(p.u_size.as_ref(), p.size_px.0 as f32, p.size_px.1 as f32);
                    gl.active_texture(glow::TEXTURE0);
                    gl.bind_texture(glow::TEXTURE_2D, Some(p.colors));
                    gl.active_texture(glow::TEXTURE1);
                    gl.bind_texture(glow::TEXTURE_2D, Some(p.ids));
                    gl.bind_vertex_array(Some(p.vao));
                    gl.draw_arrays(glow::TRIANGLE_STRIP, 0, 4);
                    gl.active_texture(glow::TEXTURE0);
                }
                _ => {}
            }
            let lines = &self.lines;
            if !lines.strips.is_empty() || !self.outlines.strips.is_empty() {
                gl.use_program(Some(lines.program));
                let [x, sx, y, sy] = map4;
                gl.uniform_4_f32(lines.u_map.as_ref(), x, sx, y, sy);
                gl.uniform_2_f32(lines.u_shift.as_ref(), 0.0, 0.0);
                gl.bind_vertex_array(Some(lines.vao));
                for &(first, count, color) in &lines.strips {
                    let [r, g, b, a] = color.to_le_bytes();
                    gl.uniform_4_f32(
                        lines.u_color.as_ref(),
                        f32::from(r) / 255.0,
                        f32::from(g) / 255.0,
                        f32::from(b) / 255.0,
                        f32::from(a) / 255.0,
                    );
                    gl.draw_arrays(glow::LINE_STRIP, first, count);
                }
                gl.uniform_4_f32(
                    lines.u_color.as_ref(),
                    outline[0],
                    outline[1],
                    outline[2],
                    outline[3],
                );
                gl.bind_vertex_array(Some(self.outlines.vao));
                let (px, py) = (1.0 / width_px.max(1) as f32, 1.0 / height_px.max(1) as f32);
                for &(first, count, selected) in &self.outlines.strips {
                    // The selection two pixels wide: again one pixel inside the band.
                    let shifts: &[(f32, f32)] = if selected {
                        &[(0.0, 0.0), (px, -py)]
                    } else {
                        &[(0.0, 0.0)]
                    };
                    for &(dx, dy) in shifts {
                        gl.uniform_2_f32(lines.u_shift.as_ref(), dx, dy);
                        gl.draw_arrays(glow::LINE_STRIP, first, count);
                    }
                }
            }
            gl.bind_vertex_array(None);
        }
    }
}

/// Clears the canvas when there is nothing to draw.
pub fn clear(gl: &glow::Context, width_px: u32, height_px: u32, background: [f32; 4]) {
    unsafe {
        gl.viewport(0, 0, width_px as i32, height_px as i32);
        gl.clear_color(background[0], background[1], background[2], background[3]);
        gl.clear(glow::COLOR_BUFFER_BIT);
    }
}

fn bytes_of_f32(values: &[f32]) -> &[u8] {
    bytemuck::cast_slice(values)
}

fn bytes_of_u32(values: &[u32]) -> &[u8] {
    bytemuck::cast_slice(values)
}
