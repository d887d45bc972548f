//! Bodies from meshes with the default material values hold their shape
//! (`wobble experiment mesh-shape` runs the full study, with the subdivided bunny
//! and the level-5 sphere): the Stanford bunny and the level-4 sphere, 20 cm,
//! dropped on a floor at the default time step, keep their volume within 5 % at
//! 1 s with no skin triangle turned over at any step, and rest at their built
//! volume within 5 %; the bunny and the sphere of the same volume change alike.

use wobble_experiments::mesh_shape::{Body, JUDGED_AT, TOLERANCE, bunnies, drop};

#[test]
fn the_bunny_and_a_level_4_sphere_hold_their_shape_with_default_materials() {
    let dir = std::env::temp_dir().join(format!("wobble-mesh-shape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (bunny, _) = bunnies(&dir).unwrap();
    for body in [bunny, Body::sphere(4)] {
        let d = drop(&body, JUDGED_AT + 0.3).unwrap();
        assert_eq!(d.flipped, 0, "{}: {} skin triangles turned over", body.label, d.flipped);
        assert!(
            (d.volume_at_judged - 1.0).abs() <= TOLERANCE,
            "{}: volume {:.4} of the built volume at {JUDGED_AT} s",
            body.label,
            d.volume_at_judged
        );
        assert!(d.worst_volume <= TOLERANCE, "{}: volume strayed by {:.2} %", body.label, 100.0 * d.worst_volume);
        // It rests on the floor, lowered by its weight, not flattened: the centre of
        // mass sank by less than 5 % of the height (a body without gas or bending
        // sinks by tens of per cent).
        assert!(d.sag > 0.0 && d.sag < 0.05, "{}: sag {:.3} %", body.label, 100.0 * d.sag);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_bending_and_lining_a_one_layer_bunny_rounds_out_beyond_the_tolerance() {
    // The control: the same bunny with the bending switched off and one layer is a
    // balloon, whose gas pops its dents and bulges its facets (an isometric change
    // the membrane cannot resist): it gains more volume than the tolerance.
    let dir = std::env::temp_dir().join(format!("wobble-mesh-shape-control-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut bunny, _) = bunnies(&dir).unwrap();
    bunny.keys.push_str("bending_stiffness = 0\nbending_damping = 0\n");
    let d = drop(&bunny, JUDGED_AT).unwrap();
    assert!(d.volume_at_judged - 1.0 > TOLERANCE, "volume {:.4}", d.volume_at_judged);
    let _ = std::fs::remove_dir_all(&dir);
}
