//! MatrixMarket coordinate reader (work in progress).
