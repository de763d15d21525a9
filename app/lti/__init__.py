"""LMS integration through LTI 1.3: registration, launch, deep linking, grade passback (AGS), roster sync (NRPS)."""
