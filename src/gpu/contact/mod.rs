//! Surface contact on the GPU (the twin of the CPU's contact stage in `solver::vbd::contact`
//! and `collision`): the BVH broadphase (`bvh_build`, `bvh_refit`), the CCD-limited initial
//! advance, detection, vertex → pair lists and bounds (`contact_*`, `scan`), and the program
//! that records them ([`program`]) over the buffers laid out in [`layout`] and [`surface`].

pub mod bvh_build;
pub mod bvh_refit;
pub mod contact_advance;
pub mod contact_bodies;
pub mod contact_catch_up;
pub mod contact_ccd;
pub mod contact_csr;
pub mod contact_detect;
pub mod contact_groups;
pub mod contact_rows;
pub mod contact_schedule;
pub mod layout;
pub mod program;
pub mod scan;
pub mod surface;
