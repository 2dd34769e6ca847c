"""Model roles: small classes over a :class:`~smcplan.llm.LanguageModel`, batched over particles.

Each role reads its prompt template and output schema from ``models/roles/<role>/`` and makes
one batched model call (or one sampling call plus one scoring call) for a whole list of inputs,
one input per particle.

=====================  ===========================================================================
``TripletExtractor``   observation (+ action) → ``[(subject, relation, object), ...]`` (NeSyFS)
``ActionProposal``     (task, triplets, observation, admissible) → action ∈ admissible, log q,
thought
``ObservationModel``   (context, action) → predicted next observation (+ its log-probabilities)
``ProgressModel``      (task, before, action, after) → δ ∈ {0, 1} and P(Yes) from Yes/No log-probs
``Reflection``         (task, context, action) → accept iff ≥ 80 % of n sampled verdicts say Yes
``Critic``             RLAW critic JSON {logic_check, safety_check, critique_score, reason}
``RLAWActor``          RLAW actor JSON {thought, action} with action ∈ admissible and its log q
=====================  ===========================================================================

Triplets are plain string 3-tuples: this layer must not import ``smcplan.memory`` (nor
``smcplan.envs`` or anything above ``llm``).
"""

from smcplan.llm.roles.judges import Critic, Critique, Reflection, Verdict
from smcplan.llm.roles.proposal import ActionProposal, ActorOutput, Proposal, RLAWActor
from smcplan.llm.roles.triplets import TripletExtractor
from smcplan.llm.roles.world import ObservationModel, Progress, ProgressModel

__all__ = [
    "TripletExtractor",
    "ActionProposal",
    "Proposal",
    "RLAWActor",
    "ActorOutput",
    "ObservationModel",
    "ProgressModel",
    "Progress",
    "Reflection",
    "Verdict",
    "Critic",
    "Critique",
]
