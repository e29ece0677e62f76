//! Writes the procedural glTF assets the bundled scenes use (`examples/scenes/assets/`): no
//! downloaded assets, and a test checks the committed files are what this writes.
//!
//! ```sh
//! cargo run --release --example make_assets
//! ```

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("scenes");
    for (path, bytes) in pliant::io::bundled::generate_bundled_assets()? {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&file, &bytes)?;
        println!("{} ({} bytes)", file.display(), bytes.len());
    }
    Ok(())
}
