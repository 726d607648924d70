# Distributed inference with Accelerate: each process scores its share of the prompts from
# split_between_processes and gathers each score as it goes. Without apply_padding=True the shares differ in
# length when the prompts do not divide evenly, so processes make different numbers of gathers. Modelled on
# Accelerate's distributed-inference guide (split_between_processes, apply_padding), written here.
# expect: 11 rank-dependent-loop accelerator.gather
def score_all(accelerator, model, prompts):
    scores = []
    with accelerator.split_between_processes(prompts) as mine:
        for prompt in mine:
            score = model(prompt)
            scores.append(accelerator.gather(score))
    return scores
