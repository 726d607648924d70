# The same inference with apply_padding=True (every share as long as the longest; the padded results are
# dropped after the gather), as Accelerate's guide recommends for gathering. Written here.
# expect: none
def score_all(accelerator, model, prompts):
    scores = []
    with accelerator.split_between_processes(prompts, apply_padding=True) as mine:
        for prompt in mine:
            score = model(prompt)
            scores.append(accelerator.gather(score))
    return scores[: len(prompts)]
