//! The page's static files, compiled into the binary (no CDN, no files at run
//! time). three.js r179 and its OrbitControls are vendored under `web/vendor/`
//! with their licence.

/// (URL path, content type, bytes).
const FILES: &[(&str, &str, &[u8])] = &[
    ("/", "text/html; charset=utf-8", include_bytes!("../web/index.html")),
    ("/index.html", "text/html; charset=utf-8", include_bytes!("../web/index.html")),
    ("/app.js", "text/javascript; charset=utf-8", include_bytes!("../web/app.js")),
    ("/style.css", "text/css; charset=utf-8", include_bytes!("../web/style.css")),
    (
        "/vendor/three.module.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../web/vendor/three.module.min.js"),
    ),
    ("/vendor/three.core.min.js", "text/javascript; charset=utf-8", include_bytes!("../web/vendor/three.core.min.js")),
    ("/vendor/OrbitControls.js", "text/javascript; charset=utf-8", include_bytes!("../web/vendor/OrbitControls.js")),
    ("/vendor/three.LICENSE", "text/plain; charset=utf-8", include_bytes!("../web/vendor/three.LICENSE")),
];

/// The content type and bytes served at `path`.
#[must_use]
pub fn get(path: &str) -> Option<(&'static str, &'static [u8])> {
    FILES.iter().find(|(p, _, _)| *p == path).map(|&(_, t, b)| (t, b))
}
