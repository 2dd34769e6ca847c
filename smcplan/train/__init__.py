"""Learning: trajectory collection, dataset files, trainers (TRL + PEFT) and their CLI.

The top layer beside :mod:`smcplan.eval` (below the CLI): it may import envs, agents,
planning, llm and eval.  The training libraries themselves (trl, peft, datasets, torch) are
imported only in :mod:`smcplan.llm.finetune`.

* :mod:`~smcplan.train.collect`: episodes into resumable JSONL shards with a header;
* :mod:`~smcplan.train.data`: strict readers (:class:`~smcplan.train.data.DatasetLineError`
  names ``file:line``);
* :mod:`~smcplan.train.world_model`: the learned world model (examples, training, scoring);
* :mod:`~smcplan.train.grpo_mr`, :mod:`~smcplan.train.grpo_mr_head`: RLVMR's GRPO-MR on a LoRA
  policy, or on a policy head over (tag, action) candidates on the frozen model's hidden state
  (:mod:`~smcplan.train.head_objective`, :mod:`~smcplan.train.head_episodes`,
  :mod:`~smcplan.train.head_config`);
* :mod:`~smcplan.train.ship`: trained artifacts into ``models/trained/`` with their manifests;
* :mod:`~smcplan.train.registry`: trainer names → entry functions;
* :mod:`~smcplan.train.cli`: ``smcplan train ...``.
"""

__all__: list[str] = []
