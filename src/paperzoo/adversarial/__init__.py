"""Adversarial attacks, defences and robust training, on any classifier ``nn.Module``.

* Attacks (``attack(x, y) -> x_adv``, inputs in [0, 1] by default): ``FGSM``, ``PGD``, ``CW``,
  ``SPSA``, and the obfuscated-gradients toolkit (Athalye et al., 2018): ``BPDA`` / ``BPDALayer``
  (backward pass differentiable approximation), ``EOT`` (expectation over transformation),
  ``Reparameterized``.
* Defences (Athalye et al.'s targets): ``ThermometerEncoding``, ``BitDepthReduction`` (inside an
  ``InputTransformDefense``), ``RandomResizePad``, ``StochasticActivationPruning``, and
  ``pgd_adversarial_training``.
* Distributional robustness (Sinha et al., 2018): ``WRM`` (the Wasserstein robust attack and
  training step) and ``check_certificate`` (the certificate of Eq. 11).
* Generative adversarial training (Lee et al., 2017): ``GenerativeAdversarialTrainer`` with its
  ``PerturbationGenerator``.

Subpackages ``attacks`` and ``defenses`` hold more (losses, projections, wrappers).
"""

from typing import TYPE_CHECKING

from paperzoo.utils.modules import lazy_exports

if TYPE_CHECKING:
    from paperzoo.adversarial.attacks import (
        BPDA,
        CW,
        EOT,
        FGSM,
        PGD,
        SPSA,
        WRM,
        Attack,
        BPDALayer,
        Reparameterized,
        WRMReport,
    )
    from paperzoo.adversarial.certificate import CertificateCheck, check_certificate
    from paperzoo.adversarial.defenses import (
        BitDepthReduction,
        InputTransformDefense,
        RandomResizePad,
        StochasticActivationPruning,
        ThermometerEncoding,
        pgd_adversarial_training,
    )
    from paperzoo.adversarial.gat import (
        GATConfig,
        GenerativeAdversarialTrainer,
        PerturbationGenerator,
    )

# each name is imported from its module on first use: importing this package imports none of them
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BPDA": "paperzoo.adversarial.attacks",
        "CW": "paperzoo.adversarial.attacks",
        "EOT": "paperzoo.adversarial.attacks",
        "FGSM": "paperzoo.adversarial.attacks",
        "PGD": "paperzoo.adversarial.attacks",
        "SPSA": "paperzoo.adversarial.attacks",
        "WRM": "paperzoo.adversarial.attacks",
        "Attack": "paperzoo.adversarial.attacks",
        "BPDALayer": "paperzoo.adversarial.attacks",
        "Reparameterized": "paperzoo.adversarial.attacks",
        "WRMReport": "paperzoo.adversarial.attacks",
        "CertificateCheck": "paperzoo.adversarial.certificate",
        "check_certificate": "paperzoo.adversarial.certificate",
        "BitDepthReduction": "paperzoo.adversarial.defenses",
        "InputTransformDefense": "paperzoo.adversarial.defenses",
        "RandomResizePad": "paperzoo.adversarial.defenses",
        "StochasticActivationPruning": "paperzoo.adversarial.defenses",
        "ThermometerEncoding": "paperzoo.adversarial.defenses",
        "pgd_adversarial_training": "paperzoo.adversarial.defenses",
        "GATConfig": "paperzoo.adversarial.gat",
        "GenerativeAdversarialTrainer": "paperzoo.adversarial.gat",
        "PerturbationGenerator": "paperzoo.adversarial.gat",
    },
)


__all__ = [
    "BPDA",
    "CW",
    "EOT",
    "FGSM",
    "PGD",
    "SPSA",
    "WRM",
    "Attack",
    "BPDALayer",
    "BitDepthReduction",
    "CertificateCheck",
    "GATConfig",
    "GenerativeAdversarialTrainer",
    "InputTransformDefense",
    "PerturbationGenerator",
    "RandomResizePad",
    "Reparameterized",
    "StochasticActivationPruning",
    "ThermometerEncoding",
    "WRMReport",
    "check_certificate",
    "pgd_adversarial_training",
]
