"""Are disentangled representations helpful for abstract visual reasoning?
(van Steenkiste, Locatello, Schmidhuber, Bachem, NeurIPS 2019, arXiv:1905.12506)

The study: train many VAEs (beta-VAE, AnnealedVAE, FactorVAE, DIP-VAE-I/II, beta-TCVAE; 6
hyperparameters x 5 seeds on each of two data sets), score every representation with six
disentanglement metrics and its reconstruction error, then train WReN models on the frozen
representations to solve PGM puzzles, and ask which score predicts the puzzle accuracy: Spearman
rank correlations between each score and the accuracy after few and after many training steps
(the paper's Fig. 4). Finding: BetaVAE, FactorVAE and DCI scores correlate positively with the
accuracy and more strongly than reconstruction early in training; the gap fades later.

The reproduction runs the same pipeline:

1. the model grid: ``ground-truth`` (the factors as the code), ``random-code`` (Gaussian noise)
   and the VAEs; each item is trained (VAEs), scored (all metrics with the study's defaults) and
   used as a frozen embedding for WReN, whose test accuracy is recorded at several step counts;
2. every finished item writes ``models/<id>/result.json`` (and the VAE's weights) in the output
   directory, so an interrupted run resumes per model and never retrains a finished one;
3. the grid is sliced deterministically for scale-out: ``--shard K/N`` keeps items i with
   i mod N == K (a Slurm array or Kubernetes indexed job), and under ``torchrun`` each rank takes
   every world_size-th item of that slice; ``paperzoo merge DIR... --out OUT`` combines the slices;
4. the sanity claims use the ground-truth and random codes; the study's claims are the Spearman
   correlations over the trained VAEs (findings for BetaVAE, FactorVAE and DCI; see above).

Data. ``full`` reads the study's first data set, abstract dSprites, drawn from the real dSprites
archive under ``--data-root`` (``paper_data``; without it the run refuses before writing anything);
the study's second, 3dshapes, has no loader here, so a full run is the 180 VAEs of one data set
(the paper: 360 over two). ``--dataset dsprites`` / ``color-shapes`` are named substitutes ("not
the paper's setting"). smoke and quick render abstract dSprites procedurally (not the official
pixels).

Deviations at ``quick`` scale (CPU minutes instead of thousands of GPU hours): 12 VAEs, each
method at the weakest and the strongest of its six settings in the study's sweep, trained for
1,000 steps (Adam 1e-4, batch 64, as the study) on 16 x 16 images of the quantized factor grid
(the puzzles' grid, 4,320 factor combinations) instead of 180 per data set for 300k steps at
64 x 64; metrics on fewer samples (BetaVAE / FactorVAE on 1,000 / 500 points, DCI's boosted trees
with 20 stages); a FactorVAE discriminator of width 256; one small WReN (edge MLP 3 x 64, graph
MLP 64) per representation trained for 600 steps on a pool of 2,000 pre-encoded puzzles and
tested on 2,000 (a binomial standard error of about 0.01 on its accuracy).

The study's findings are judged at quick as at full, and they are not expected to hold there:
the quick VAEs are barely disentangled (their scores sit in a narrow band near chance), so the
correlations at quick rank 12 models by noise; the finding needs ``full``'s training.

Protocol, the design probes behind the quick scale, and results: docs/disentanglement.md. This
package: ``config.py`` (the grids, ``Config``, ``CONFIGS``, ``CLAIMS``), ``training.py`` (one
grid item: VAE, metrics, WReNs, its cached record), ``study.py`` (grid slicing, the Spearman
summary), ``experiment.py`` (``DisentanglementExperiment``: run, merge, figures).
"""

from paperzoo.papers.disentanglement.config import CLAIMS, CONFIGS, Config
from paperzoo.papers.disentanglement.experiment import DisentanglementExperiment

__all__ = ["CLAIMS", "CONFIGS", "Config", "DisentanglementExperiment"]
