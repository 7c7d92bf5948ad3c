"""Every requirement of the packages in cuda-stack.txt, less the ones marked not-on-index.

Run inside the rehearsal image (pip's own vendored `packaging` reads the markers): downloads
each package's wheel alone, reads its declared requirements with its extras, and prints them
one a line for `pip install -r`. Usage: python3 cuda_requirements.py CUDA_STACK_TXT WORKDIR
"""

import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name


def main(stack_file: str, workdir: str) -> None:
    text = Path(stack_file).read_text()
    wanted = [Requirement(line) for line in text.splitlines() if line and line[0] != "#"]
    skipped = {canonicalize_name(n) for n in re.findall(r"^# not-on-index: (\S+)$", text, re.M)}
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", workdir]
        + [str(r) for r in wanted],
        check=True,
    )
    top = {canonicalize_name(r.name) for r in wanted}  # installed on their own, --no-deps
    out = []
    for requirement in wanted:
        name = canonicalize_name(requirement.name).replace("-", "_")
        wheel = next(
            w for w in Path(workdir).glob("*.whl")
            if canonicalize_name(w.name.split("-")[0]).replace("-", "_") == name
        )
        with zipfile.ZipFile(wheel) as archive:
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            headers = Parser().parsestr(archive.read(meta).decode())
        for line in headers.get_all("Requires-Dist") or []:
            needed = Requirement(line)
            extras = requirement.extras or {""}
            if needed.marker and not any(needed.marker.evaluate({"extra": e}) for e in extras):
                continue
            if canonicalize_name(needed.name) in skipped | top:
                continue
            needed.marker = None
            out.append(str(needed))
    print("\n".join(dict.fromkeys(out)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
