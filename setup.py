"""Build script for attntopo's optional C kernel (everything else is in pyproject.toml).

``attntopo._native._jsd`` speeds up the Jensen–Shannon distances several-fold.  It is optional:
where no C compiler is available the build prints a warning and attntopo uses its
pure-torch path instead (same results to ~1e-15; see attntopo._native).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """Compiler-specific flags: vectorized loops (OpenMP SIMD pragmas, no OpenMP runtime)."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "msvc":
            flags = ["/O2"]
        else:
            # -ffp-contract=fast lets the AVX2 clone fuse multiply-adds; no -ffast-math:
            # the logarithm relies on IEEE rounding of every other operation
            # -fno-math-errno, -fno-trapping-math: sqrt and the clamps inside the loops become
            # vector instructions (errno and floating-point traps are never used); results are
            # the same IEEE operations either way
            flags = [
                "-O3",
                "-fopenmp-simd",
                "-ffp-contract=fast",
                "-fno-math-errno",
                "-fno-trapping-math",
                "-fvisibility=hidden",
            ]
        for ext in self.extensions:
            ext.extra_compile_args = flags
            if self.compiler.compiler_type != "msvc":
                ext.libraries = ["m"]
        super().build_extensions()


setup(
    ext_modules=[
        Extension("attntopo._native._jsd", sources=["src/attntopo/_native/jsd.c"], optional=True)
    ],
    cmdclass={"build_ext": BuildExt},
)
