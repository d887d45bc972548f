//! Pictures of wobble runs, without a GPU: line charts of experiment data
//! ([`plot`], through plotters), frames drawn by a small software rasteriser
//! ([`render`]: a live `World` or a PLY frame, Gouraud or flat shading, strain
//! colours, springs, colliders), and the PNG and GIF files they go to ([`image`]).
//! Used by the experiments (`wobble-experiments`) and by `wobble render`.

pub mod image;
pub mod plot;
pub mod render;
