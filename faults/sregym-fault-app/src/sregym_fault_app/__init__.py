"""Application-configuration fault primitives."""
