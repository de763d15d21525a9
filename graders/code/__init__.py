"""The TRUSTED side of code grading: check framework, StudentProxy (RPC client), the attention check library."""
