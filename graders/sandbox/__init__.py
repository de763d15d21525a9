"""The UNTRUSTED side of code grading: zygote, lockdown, wire protocol and the runner that executes student code.

Modules that run inside the jail (zygote, child, lockdown, seccomp_filter, wire, codec) import only the standard
library, torch and numpy: never graders.code or a problem set. The rest (config, jail, zygote_client, slot, pool,
cgroups, procfs, uids, channel) run in the trusted process and drive the jail from outside.
"""
