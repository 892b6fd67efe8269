//! The soak run (see `make soak`).
