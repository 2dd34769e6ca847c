"""Main job placeholder: replaced by the NeSyFS agent on TextWorldExpress (issue 9)."""

print("smcplan: main job not wired yet")
