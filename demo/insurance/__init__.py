"""HomeInsuranceQuoteFlow: a preliminary home-insurance quote, facts by the model, rules by code."""
