//! `nav`: navkit's command-line tool.
fn main() {
    println!("nav: see README.md");
}
