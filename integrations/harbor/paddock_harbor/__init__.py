"""paddock for Harbor: `PaddockAgent` (`-a paddock_harbor:PaddockAgent`) and, for machines
without a container daemon, `ChrootEnvironment` (`-e paddock_harbor.chroot:ChrootEnvironment`)."""

from paddock_harbor.agent import PaddockAgent

__all__ = ["PaddockAgent"]
