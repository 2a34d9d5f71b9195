"""Python client of unmask's gRPC API (package unmask.v1).

    from unmask_client import Client
    with Client("127.0.0.1:50051", api_key="unmask-...") as c:
        print(c.generate("And God said unto Moses,", model="unmask-kjv", gen_length=32).text)
        for step in c.stream(chat=[{"role": "user", "content": "What does John 3:16 say?"}], model="unmask-kjv"):
            print(step.step, step.positions, step.tokens)
        print(c.infill("In the beginning God", " the heaven and the earth.", gen_length=4, model="unmask-kjv").text)
        print(c.fill_template('{"book": "<hole:3>"}', "John 3:16", model="unmask-kjv", logprobs=2).logprobs)
        print(c.loglikelihood("In the beginning God created the heaven", " and the earth.", model="unmask-kjv",
                              seed=1).likelihood.loglikelihood)
"""

from unmask_client.client import (
    Accepted,
    Adjustment,
    Client,
    GenerationStream,
    Job,
    Likelihood,
    Result,
    Step,
    TokenLogprob,
    ToolCall,
    TopLogprob,
    UnmaskError,
)

__all__ = ["Accepted", "Adjustment", "Client", "GenerationStream", "Job", "Likelihood", "Result", "Step",
           "TokenLogprob", "ToolCall", "TopLogprob", "UnmaskError"]
