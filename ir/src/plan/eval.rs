//! The plan interpreter (being written).
