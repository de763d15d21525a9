#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image, from /autograder/source (this repository, zipped
# with gradescope/ at its top as docs/gradescope.md describes).
set -euo pipefail
cd /autograder/source
apt-get update
apt-get install -y --no-install-recommends bubblewrap python3.11 python3.11-venv
python3.11 -m venv /opt/autograder
# The constraints file pins every dependency to the versions the project is tested with.
# The CPU build of torch: Gradescope's machines have no GPU, and the default wheel brings gigabytes of CUDA.
/opt/autograder/bin/pip install --extra-index-url https://download.pytorch.org/whl/cpu -c constraints.txt .
ln -sf /opt/autograder/bin/autograder /usr/local/bin/autograder
cp gradescope/run_autograder /autograder/run_autograder
cp gradescope/config.env /autograder/config.env
chmod +x /autograder/run_autograder
# Fails the image build (not a student's submission) when the sandbox cannot start in Gradescope's container.
autograder doctor
