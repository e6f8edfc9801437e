//! Printing a plan (being written).
