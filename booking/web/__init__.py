"""Web helpers shared by the buyer's, the staff's and the door's pages: cookies, middleware, rate limits, push."""
