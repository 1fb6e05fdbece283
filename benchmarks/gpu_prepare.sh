#!/bin/bash
# Prepare a GPU machine's run of benchmarks/gpu_acceptance.sh, here, on a machine with the
# internet: the wheels robench needs beside a machine's own torch (Python 3.12, x86-64; the
# H200 of reports/benchmarks.md had torch 2.11 and numpy, scipy, pandas, typer, rich, jinja2,
# matplotlib, numba, pillow, scikit-image and opencv), and Fashion-MNIST's test split, which
# the gpu tests and the verdict-cost runs read. Writes .whl/ and .gpu/fmnist/ (both ignored by
# git through .git/info/exclude), about 12 MB together.
#
#   bash benchmarks/gpu_prepare.sh [PYTHON]     # PYTHON: the pip to download with (python3)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}
mkdir -p .git/info .whl .gpu/fmnist
for ignored in /.whl/ /.gpu/; do
    grep -qxF "$ignored" .git/info/exclude 2>/dev/null || echo "$ignored" >> .git/info/exclude
done
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl \
    torchattacks==3.5.1 pyautoattack==0.2.0 pydantic==2.14.3 pydantic_core==2.50.4 \
    annotated-types==0.8.0 typing-inspection==0.4.5 orjson==3.13.0 timm==1.0.31 \
    imagecorruptions-imaug==1.1.5
# pyautoattack's wheel carries a 45 MB example checkpoint robench never reads: repack without it.
wheel=$(ls .whl/pyautoattack-*.whl)
scratch=$(mktemp -d)
(cd "$scratch" && unzip -q "$OLDPWD/$wheel" && rm -rf pyautoattack/examples \
    && sed -i '/pyautoattack\/examples/d' pyautoattack-*.dist-info/RECORD \
    && rm "$OLDPWD/$wheel" && zip -qr "$OLDPWD/$wheel" .)
rm -rf "$scratch"
data=${ROBENCH_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
cp "$data"/t10k-images-idx3-ubyte.gz "$data"/t10k-labels-idx1-ubyte.gz .gpu/fmnist/
du -sh .whl .gpu
