from typing import Any

from . import InputError, Program

class ChunkError(InputError): ...

def run(prog: Program, **arrays: Any) -> dict[str, Any]: ...
