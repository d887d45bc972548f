//! PNG encoding of RGB pixel buffers.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// Saves 8-bit RGB pixels (row-major, `width × height × 3` bytes) as a PNG file.
pub fn save_rgb_png(path: &Path, width: u32, height: u32, rgb: &[u8]) -> std::io::Result<()> {
    let file = BufWriter::new(File::create(path)?);
    let mut enc = png::Encoder::new(file, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(std::io::Error::other)?;
    writer.write_image_data(rgb).map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}
